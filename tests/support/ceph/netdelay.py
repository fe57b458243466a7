#!/usr/bin/env python3
"""Delays every packet of one netfilter queue by a fixed time: `tc netem
delay D` done in user space, for a host whose kernel has no sch_netem.

    netdelay.py --queue N --delay-ms D [--stats FILE]

An iptables rule sends the packets to queue N (ceph-up.sh adds one for the
test Ceph's ports: `-j NFQUEUE --queue-num N`); this process holds each
packet D ms from when it arrived and then lets it go on (NF_ACCEPT). Packets
leave in the order they came (the delay is the same for all), so one batch
verdict releases every packet whose time is up. Only the packets' metadata
is copied to user space, never their data.

The kernel's side (include/uapi/linux/netfilter/nfnetlink_queue.h): a
netlink socket of NETLINK_NETFILTER, messages of subsystem NFNL_SUBSYS_QUEUE;
CONFIG binds the queue (NFQNL_CFG_CMD_BIND), sets copy mode META, the queue
length and flags (GSO: a loopback GSO packet is queued whole, as netem sees
it; no FAIL_OPEN: a full queue drops, as a full netem queue does);
PACKET brings a packet's id; VERDICT_BATCH accepts every id up to one.

Runs until SIGTERM; with --stats writes "packets N max_queue M mean_late_us
L" there every second and at exit: how many packets passed here, the most
held at once, and how much later than due they were let go on average (this
process's own overhead; the kernel's path to and from the queue is not in it).
Exit status 1 when the queue cannot be bound (no CONFIG_NETFILTER_NETLINK_QUEUE,
not root, or the queue is already bound by another process).
"""
import argparse
import collections
import ctypes
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 1, 2, 3
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQA_CFG_MASK, NFQA_CFG_FLAGS = 4, 5
NFQA_CFG_F_GSO = 1 << 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
PR_SET_TIMERSLACK = 29
QUEUE_MAXLEN = 16384


def attr(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + b"\0" * (-length % 4)


def message(kind, queue, attrs, flags=NLM_F_REQUEST, seq=0):
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue) + b"".join(attrs)
    header = struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind, flags, seq, 0)
    return header + body


def configure(sock, queue):
    """Binds the queue and sets its mode; raises OSError with the kernel's errno."""
    requests = [
        [attr(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_BIND, 0, socket.AF_INET))],
        [attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)),
         attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN)),
         attr(NFQA_CFG_MASK, struct.pack("!I", NFQA_CFG_F_GSO)),
         attr(NFQA_CFG_FLAGS, struct.pack("!I", NFQA_CFG_F_GSO))],
    ]
    for seq, attrs in enumerate(requests, 1):
        sock.send(message(NFQNL_MSG_CONFIG, queue, attrs, NLM_F_REQUEST | NLM_F_ACK, seq))
        reply = sock.recv(65536)
        length, kind = struct.unpack_from("=IH", reply)
        if kind == NLMSG_ERROR:
            (error,) = struct.unpack_from("=i", reply, 16)
            if error:
                raise OSError(-error, os.strerror(-error))


def packet_ids(datagram):
    """The packet ids of the PACKET messages in one datagram."""
    offset = 0
    while offset + 16 <= len(datagram):
        length, kind = struct.unpack_from("=IH", datagram, offset)
        if length < 16:
            return
        if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            at = offset + 20  # nlmsghdr, nfgenmsg
            while at + 4 <= offset + length:
                attr_len, attr_kind = struct.unpack_from("=HH", datagram, at)
                if attr_len < 4:
                    break
                if attr_kind & 0x7FFF == NFQA_PACKET_HDR:
                    yield struct.unpack_from("!I", datagram, at + 4)[0]
                    break
                at += (attr_len + 3) & ~3
        offset += (length + 3) & ~3


class Stats:
    def __init__(self, path):
        self.path, self.packets, self.max_queue, self.written = path, 0, 0, 0.0
        self.released, self.late_s = 0, 0.0  # packets let go, and their sum of lateness

    def write(self, force=False):
        now = time.monotonic()
        if not self.path or (not force and now - self.written < 1):
            return
        self.written = now
        with open(self.path + ".new", "w") as out:
            late_us = 1e6 * self.late_s / self.released if self.released else 0.0
            out.write(f"packets {self.packets} max_queue {self.max_queue}"
                      f" mean_late_us {late_us:.0f}\n")
        os.replace(self.path + ".new", self.path)


def run(queue, delay_s, stats):
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((0, 0))
    configure(sock, queue)
    held = collections.deque()  # (release time, packet id), in arrival order
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    while not stopping:
        now = time.monotonic()
        last = None
        while held and held[0][0] <= now:
            due, last = held.popleft()
            stats.released += 1
            stats.late_s += now - due
        if last is not None:
            verdict = attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, last))
            sock.send(message(NFQNL_MSG_VERDICT_BATCH, queue, [verdict]))
        timeout = max(0.0, held[0][0] - now) if held else 1.0
        try:
            readable, _, _ = select.select([sock], [], [], timeout)
        except InterruptedError:
            continue
        if readable:
            try:
                datagram = sock.recv(65536)
            except OSError as error:  # ENOBUFS: the kernel dropped messages for us
                print(f"netdelay: {error}", file=sys.stderr)
                continue
            arrived = time.monotonic()
            for packet_id in packet_ids(datagram):
                held.append((arrived + delay_s, packet_id))
                stats.packets += 1
            stats.max_queue = max(stats.max_queue, len(held))
        stats.write()
    # Let what is held go now rather than drop it with the queue.
    if held:
        verdict = attr(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, held[-1][1]))
        sock.send(message(NFQNL_MSG_VERDICT_BATCH, queue, [verdict]))
    stats.write(force=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", type=int, required=True, help="netfilter queue number 0..65535")
    parser.add_argument("--delay-ms", type=float, required=True, help="delay of every packet, ms")
    parser.add_argument("--stats", help="file to write packet counts to")
    args = parser.parse_args()
    if not 0 <= args.queue <= 65535 or not 0 < args.delay_ms <= 1000:
        parser.error("--queue must be 0..65535 and --delay-ms in (0, 1000]")
    # The default 50 us timer slack would add up to 50 us to every release.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    try:
        run(args.queue, args.delay_ms / 1000.0, Stats(args.stats))
    except OSError as error:
        print(f"netdelay: queue {args.queue}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
