"""Stop latency of `arbiter uci`: the time from `stop` to `bestmove` during `go infinite`.

Usage: python stop_latency.py ARBITER_BINARY [TRIALS]   (standard library only)

Each trial sets a position (the start position and a few middlegames, in turn), sends
`go infinite`, waits 50 to 300 ms (so the stop lands anywhere inside an iteration), then sends
`stop` and times the answer `bestmove`. The reference, measured in the same run and the same
way, is the round trip of `isready` → `readyok`: what the pipes and the UCI loop cost without a
search to stop. Prints the median, 99th percentile and maximum of both, and the ratio of medians.
"""
import random
import statistics
import subprocess
import sys
import time

POSITIONS = [
    "startpos",
    "fen r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "fen r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "fen 8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "fen 2r3k1/1q1nbppp/r3p3/3pP3/pPpP4/P1Q2N2/2RN1PPP/2R4K b - - 0 23",
]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(binary: str, trials: int) -> None:
    engine = subprocess.Popen([binary, "uci"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1)

    def send(line):
        engine.stdin.write(line + "\n")
        engine.stdin.flush()

    def wait_for(prefix):
        while True:
            line = engine.stdout.readline()
            if not line:
                sys.exit("the engine closed its output")
            if line.startswith(prefix):
                return line

    send("uci")
    wait_for("uciok")
    send("setoption name Hash value 64")
    rng = random.Random(1)
    stops, readies = [], []
    for i in range(trials):
        send("position " + POSITIONS[i % len(POSITIONS)])
        send("isready")
        wait_for("readyok")
        t0 = time.perf_counter()
        send("isready")
        wait_for("readyok")
        readies.append(time.perf_counter() - t0)
        send("go infinite")
        time.sleep(rng.uniform(0.05, 0.3))
        t0 = time.perf_counter()
        send("stop")
        wait_for("bestmove")
        stops.append(time.perf_counter() - t0)
    send("quit")
    engine.wait(timeout=10)

    def line(name, values):
        ms = [v * 1000 for v in values]
        print(f"{name:<22} median {statistics.median(ms):7.3f} ms   p99 {percentile(ms, 0.99):7.3f} ms"
              f"   max {max(ms):7.3f} ms")

    print(f"{trials} trials")
    line("stop -> bestmove", stops)
    line("isready -> readyok", readies)
    print(f"ratio of medians: {statistics.median(stops) / statistics.median(readies):.2f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200)
