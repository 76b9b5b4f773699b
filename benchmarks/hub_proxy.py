"""The workshop hub's proxy: the Python configurable-http-proxy (what scripts/workshop.sh runs)
beside the Node.js one (what JupyterHub installs by default), in one run.

Each proxy forwards to the same backend (a small aiohttp server in its own process: a 20 KB
page, and a WebSocket that echoes, as a kernel's channel does). A room is simulated by N
clients at once; each round starts both proxies afresh and times them in turn, the order
alternating from round to round, so neither always runs second. Prints requests per second,
the median and 95th-percentile latency, WebSocket round trips per second and each proxy's
memory (RSS after the load).

    .venv/bin/python benchmarks/hub_proxy.py [--clients 25] [--seconds 5] [--rounds 4]

Needs Node.js's proxy for the comparison: `npm install --prefix .venv/hub
configurable-http-proxy@5.3.0` (the benchmark says so and times the Python one alone without it).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import psutil

ROOT = Path(__file__).resolve().parents[1]
PROXIES = {"python": [str(ROOT / ".venv" / "bin" / "configurable-http-proxy")],
           "node": [str(ROOT / ".venv" / "hub" / "node_modules" / ".bin" / "configurable-http-proxy")]}
BACKEND = r'''
import sys
from aiohttp import web
page = b"x" * 20_000
async def get(request):
    return web.Response(body=page)
async def ws(request):
    sock = web.WebSocketResponse()
    await sock.prepare(request)
    async for message in sock:
        await sock.send_str(message.data)
    return sock
app = web.Application()
app.add_routes([web.get("/page", get), web.get("/ws", ws)])
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on port {port} after {timeout} s")


async def load(base: str, clients: int, seconds: float) -> dict:
    """`clients` loops fetching the page for `seconds`, then each does WebSocket round trips for `seconds`."""
    latencies: list[float] = []
    trips = 0

    async with aiohttp.ClientSession() as session:
        async def fetch_loop(stop: float) -> None:
            while time.monotonic() < stop:
                began = time.perf_counter()
                async with session.get(f"{base}/page") as r:
                    assert r.status == 200 and len(await r.read()) == 20_000
                latencies.append(time.perf_counter() - began)

        async def ws_loop(stop: float) -> None:
            nonlocal trips
            async with session.ws_connect(f"{base}/ws") as sock:
                while time.monotonic() < stop:
                    await sock.send_str("ping" * 64)
                    assert (await sock.receive()).data == "ping" * 64
                    trips += 1

        stop = time.monotonic() + seconds
        await asyncio.gather(*(fetch_loop(stop) for _ in range(clients)))
        stop = time.monotonic() + seconds
        await asyncio.gather(*(ws_loop(stop) for _ in range(clients)))
    ordered = sorted(latencies)
    return {"requests_per_s": len(ordered) / seconds, "median_ms": 1000 * statistics.median(ordered),
            "p95_ms": 1000 * ordered[int(0.95 * (len(ordered) - 1))], "ws_round_trips_per_s": trips / seconds}


def run_proxy(kind: str, backend: int, clients: int, seconds: float) -> dict:
    port, api = free_port(), free_port()
    env = dict(os.environ, CONFIGPROXY_AUTH_TOKEN="benchmark")
    proc = subprocess.Popen([*PROXIES[kind], "--ip", "127.0.0.1", "--port", str(port), "--api-ip", "127.0.0.1",
                             "--api-port", str(api), "--default-target", f"http://127.0.0.1:{backend}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        result = asyncio.run(load(f"http://127.0.0.1:{port}", clients, seconds))
        result["rss_mib"] = psutil.Process(proc.pid).memory_info().rss / 2**20
        return result
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=25)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    kinds = [kind for kind, command in PROXIES.items() if Path(command[0]).exists()]
    if "node" not in kinds:
        print("Node.js's proxy is not installed in .venv/hub: timing the Python one alone", file=sys.stderr)
    backend = free_port()
    server = subprocess.Popen([sys.executable, "-c", BACKEND, str(backend)])
    results: dict[str, list[dict]] = {kind: [] for kind in kinds}
    try:
        wait_for(backend)
        for round_ in range(args.rounds):
            for kind in kinds if round_ % 2 == 0 else kinds[::-1]:
                results[kind].append(run_proxy(kind, backend, args.clients, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=10)
    summary = {kind: {key: round(statistics.median(r[key] for r in rounds), 1) for key in rounds[0]}
               for kind, rounds in results.items()}
    print(json.dumps({"clients": args.clients, "seconds": args.seconds, "rounds": args.rounds,
                      "cores": os.cpu_count(), "median_of_rounds": summary}, indent=2))


if __name__ == "__main__":
    main()
