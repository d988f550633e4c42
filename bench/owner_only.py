"""What owner-only costs: the same LocalCluster with mutual TLS (as xmdata starts every cluster) and
with plain TCP, side by side in one run, rounds alternating so that the machine's drift falls on
both. CPU-s summed over this process (client and scheduler) and every worker and nanny.

Per round and kind: the cluster's start, a new client's connect (what every command that sends
work to the warm cluster pays), and 1,000 trivial tasks (what each shard's round trip pays).
Goal (issue 30): no cost a user would notice: the warm fixed cost stays ≤ 3 s, per-task
orchestration within the bench's ≤ 10 CPU-ms a shard.
"""
from __future__ import annotations

import statistics
import time

import psutil

ROUNDS = 3
TASKS = 1_000


def tree_cpu() -> float:
    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


class Meter:
    def __enter__(self):
        self.wall0, self.cpu0 = time.perf_counter(), tree_cpu()
        return self

    def __exit__(self, *exc):
        self.wall_s, self.cpu_s = time.perf_counter() - self.wall0, tree_cpu() - self.cpu0
        return False


def one(x):
    return x + 1


def measure(tls: bool) -> dict:
    import dask
    from distributed import Client, LocalCluster

    from xmdata.runtime.cluster import HEALTH_ONLY, ONE_SHARD_A_WORKER, close_local_cluster, start_local_cluster

    figures = {}
    with Meter() as m:
        if tls:
            cluster, client = start_local_cluster(2)
        else:  # the same cluster, as it was before: plain TCP, no certificates
            with dask.config.set({**ONE_SHARD_A_WORKER, **HEALTH_ONLY}):
                cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False})
            client = Client(cluster, set_as_default=False)
        client.wait_for_workers(2)
    figures["start"] = (m.wall_s, m.cpu_s)
    try:
        security = client.security if tls else None
        connects = []
        for _ in range(5):
            with Meter() as m:
                with Client(cluster.scheduler_address, security=security, set_as_default=False) as other:
                    other.run(lambda: 1)
            connects.append((m.wall_s, m.cpu_s))
        figures["connect + run"] = tuple(statistics.median(c[i] for c in connects) for i in (0, 1))
        with Meter() as m:
            assert sum(client.gather(client.map(one, range(TASKS), pure=False))) == TASKS * (TASKS + 1) // 2
        figures[f"{TASKS} tasks"] = (m.wall_s, m.cpu_s)
        assert cluster.scheduler_address.startswith("tls://" if tls else "tcp://")
    finally:
        close_local_cluster(cluster, client)
    return figures


def main() -> dict:
    rounds = {"tcp": [], "tls": []}
    for r in range(ROUNDS):
        for kind in (("tcp", "tls") if r % 2 == 0 else ("tls", "tcp")):
            rounds[kind].append(measure(kind == "tls"))
    print(f"owner_only: a LocalCluster of 2 workers, plain TCP vs mutual TLS, {ROUNDS} rounds alternating; "
          f"median wall s / CPU-s (this process + workers + nannies)")
    result = {}
    for key in rounds["tcp"][0]:
        med = {kind: tuple(statistics.median(f[key][i] for f in rounds[kind]) for i in (0, 1)) for kind in rounds}
        per = 1000 / TASKS if key.endswith("tasks") else 1
        ratio = med["tls"][1] / med["tcp"][1] if med["tcp"][1] else float("nan")
        print(f"  {key:16s} tcp {med['tcp'][0]:6.3f} s {med['tcp'][1] * per:7.3f} CPU-s   "
              f"tls {med['tls'][0]:6.3f} s {med['tls'][1] * per:7.3f} CPU-s   CPU ratio {ratio:.2f}x"
              + ("   (CPU-s shown per 1,000 tasks)" if per != 1 else ""))
        result[key] = {"tcp": med["tcp"], "tls": med["tls"], "cpu_ratio": round(ratio, 2)}
    return result


if __name__ == "__main__":
    main()
