#include "daemon/plan/run_order.h"

#include <cstdint>

#include "common/sha256.h"

namespace ds {
namespace {

// splitmix64 (Steele, Lea, Flood 2014; constants as in Vigna's public-domain
// reference): a tiny generator whose output depends only on its 64-bit state,
// so the run order for a seed is the same on every platform and compiler.
class SplitMix64 {
  public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        state_ += 0x9e3779b97f4a7c15ull;
        std::uint64_t z = state_;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

    // Uniform in [0, bound), bound > 0, without modulo bias: outputs below
    // 2^64 mod bound are rejected so every residue is equally likely.
    std::uint64_t below(std::uint64_t bound) {
        const std::uint64_t rejection_threshold = (0 - bound) % bound;
        std::uint64_t draw = next();
        while (draw < rejection_threshold) draw = next();
        return draw % bound;
    }

  private:
    std::uint64_t state_;
};

// The spec's seed, or (seed 0) the first 8 bytes of SHA-256(name), big-endian.
std::uint64_t shuffle_seed(const SweepSpec& spec) {
    if (spec.seed != 0) return spec.seed;
    const auto digest = sha256_digest(spec.name);
    std::uint64_t seed = 0;
    for (int i = 0; i < 8; ++i) seed = (seed << 8) | digest[i];
    return seed;
}

}  // namespace

void schedule_rounds(const SweepSpec& spec, const std::vector<std::pair<int, int>>& pairs_to_run,
                     SweepPlan& plan) {
    const std::uint64_t pairs_per_round = pairs_to_run.size();
    SplitMix64 generator(shuffle_seed(spec));
    plan.runs.reserve(pairs_per_round * static_cast<std::uint64_t>(spec.repetitions));
    for (int round = 0; round < spec.repetitions; ++round) {
        std::vector<PlannedRun> pairs;
        pairs.reserve(pairs_per_round);
        for (const auto& [c, w] : pairs_to_run) {
            PlannedRun run;
            run.config_index = c;
            run.workload_index = w;
            run.repetition = round;
            pairs.push_back(run);
        }
        for (std::size_t i = pairs.size(); i > 1; --i) {
            const std::size_t j = static_cast<std::size_t>(generator.below(i));
            std::swap(pairs[i - 1], pairs[j]);
        }
        for (auto& run : pairs) {
            run.sequence = static_cast<int>(plan.runs.size());
            plan.runs.push_back(run);
        }
    }
}

}  // namespace ds
