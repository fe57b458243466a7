#!/usr/bin/env python3
"""Expected values for tests/unit/daemon/compare/stats_reference_test.cpp.

Computed here independently of the C++ code (and of Boost.Math): plain
formulas, Python's math module, Student's t distribution from the regularized
incomplete beta function (Lentz's continued fraction) and its quantile by
bisection. The quantiles are also checked against printed table values.

Run:  python3 tests/data/stats/reference.py > tests/data/stats/expected.json
"""
import json
import math


def betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def betai(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * betacf(a, b, x) / a
    return 1.0 - front * betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    return betai(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q, df):
    """q-quantile (q > 0.5) of Student's t, by bisection on the CDF."""
    target = 2.0 * (1.0 - q)  # two-sided tail probability
    lo, hi = 0.0, 1e4
    for _ in range(300):
        mid = (lo + hi) / 2.0
        if t_two_sided_p(mid, df) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def normal_quantile(q):
    lo, hi = -40.0, 40.0
    for _ in range(300):
        mid = (lo + hi) / 2.0
        if 0.5 * math.erfc(-mid / math.sqrt(2.0)) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


# Printed table values (e.g. NIST/SEMATECH e-Handbook, table of t(0.975, df))
# the bisection must reproduce to the printed precision.
TABLE_T975 = {1: 12.706, 2: 4.303, 5: 2.571, 10: 2.228, 30: 2.042, 100: 1.984}
for df, printed in TABLE_T975.items():
    assert abs(t_quantile(0.975, df) - printed) < 6e-4, (df, t_quantile(0.975, df))
assert abs(normal_quantile(0.975) - 1.959964) < 1e-6


def summary(values):
    n = len(values)
    mean = sum(values) / n
    ordered = sorted(values)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0
    out = {"n": n, "mean": mean, "median": median, "min": min(values), "max": max(values),
           "stddev": None, "cv": None, "ci95_low": None, "ci95_high": None,
           "geomean": math.exp(sum(math.log(v) for v in values) / n)
           if all(v > 0 for v in values) else None}
    if n >= 2:
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
        out.update(stddev=sd, cv=sd / abs(mean) if mean else None,
                   ci95_low=mean - half, ci95_high=mean + half)
    return out


def ratio(candidate, baseline):
    """candidate/baseline on the log scale; each side {round: value}."""
    lc = {r: math.log(v) for r, v in candidate.items()}
    lb = {r: math.log(v) for r, v in baseline.items()}
    if sorted(lc) == sorted(lb) and len(lc) >= 2:
        d = [lc[r] - lb[r] for r in sorted(lc)]
        n = len(d)
        m = sum(d) / n
        se = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1) / n)
        df, diff, method = n - 1, m, "paired"
    elif len(lc) >= 2 and len(lb) >= 2:
        c, b = list(lc.values()), list(lb.values())
        mc, mb = sum(c) / len(c), sum(b) / len(b)
        vc = sum((x - mc) ** 2 for x in c) / (len(c) - 1) / len(c)
        vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
        se = math.sqrt(vc + vb)
        df = (vc + vb) ** 2 / (vc ** 2 / (len(c) - 1) + vb ** 2 / (len(b) - 1)) \
            if vc + vb > 0 else len(c) + len(b) - 2
        diff, method = mc - mb, "welch"
    else:
        c, b = list(lc.values()), list(lb.values())
        return {"method": "none", "ratio": math.exp(sum(c) / len(c) - sum(b) / len(b)),
                "ci95_low": None, "ci95_high": None, "p_value": None}
    if se == 0:
        return {"method": method, "ratio": math.exp(diff), "ci95_low": math.exp(diff),
                "ci95_high": math.exp(diff), "p_value": 1.0 if diff == 0 else 0.0}
    half = t_quantile(0.975, df) * se
    return {"method": method, "ratio": math.exp(diff), "ci95_low": math.exp(diff - half),
            "ci95_high": math.exp(diff + half), "p_value": t_two_sided_p(diff / se, df),
            "df": df}


SUMMARIES = {
    "three runs": [14, 10, 12],
    "eight values": [2, 4, 4, 4, 5, 5, 7, 9],
    "n = 1": [3.5],
    "zero variance": [7, 7, 7, 7],
    "iops": [3035.2, 2511.7, 3560.9, 3100.4, 2890.0],
    "forty-one values": list(range(41)),
    "a zero value": [0, 5, 10],
}

RATIOS = {
    # Both ran in rounds 0..3: paired by round.
    "paired": ({0: 3100.0, 1: 2950.0, 2: 3300.0, 3: 3010.0},
               {0: 2800.0, 1: 2700.0, 2: 2980.0, 3: 2790.0}),
    # The candidate's round 2 failed: not the same rounds, so Welch.
    "one failed round": ({0: 3100.0, 1: 2950.0, 3: 3010.0},
                         {0: 2800.0, 1: 2700.0, 2: 2980.0, 3: 2790.0}),
    # A run each: a ratio, no interval.
    "n = 1": ({0: 120.0}, {0: 100.0}),
    # Paired differences all the same: zero spread, the interval is the point.
    "zero variance": ({0: 20.0, 1: 20.0}, {0: 10.0, 1: 10.0}),
    "no difference": ({0: 10.0, 1: 11.0, 2: 9.0}, {0: 10.0, 1: 11.0, 2: 9.0}),
}

HOLM = [0.01, 0.04, 0.03, 0.005]

print(json.dumps({
    "t975": {str(df): t_quantile(0.975, df) for df in (1, 2, 3, 5, 7, 10, 29, 30, 31, 45, 60, 1000)},
    "t_quantile_fractional": {"q": 0.975, "df": 7.5, "value": t_quantile(0.975, 7.5)},
    "t_two_sided_p": {"t": 2.5, "df": 6, "value": t_two_sided_p(2.5, 6)},
    "normal975": normal_quantile(0.975),
    "summaries": {name: {"values": v, "expected": summary(v)} for name, v in SUMMARIES.items()},
    "ratios": {name: {"candidate": [[r, x] for r, x in sorted(c.items())],
                      "baseline": [[r, x] for r, x in sorted(b.items())],
                      "expected": ratio(c, b)} for name, (c, b) in RATIOS.items()},
    "holm": {"p": HOLM, "adjusted": [0.03, 0.06, 0.06, 0.02]},
}, indent=1, sort_keys=True))
