// node-bench.js: node-redlock 5 (with ioredis, auto-pipelining on) doing the
// same lock + unlock cycles as redlock-bench, for bench/compare.sh.
//
//   node node-bench.js --node PORT [--node PORT ...] [--server-pids P,P,...]
//        [--mode throughput|latency] [--concurrency C] [--duration S]
//        [--warmup S] [--ttl MS]
//
// C workers each loop acquire(["node:<run>:<worker>"], ttl) + release() on
// their own resource (as redlock-bench's slots), on 127.0.0.1 only.  Prints
// one JSON line: cycles/s, acquire and cycle latency percentiles (ms), client
// CPU per cycle (process.cpuUsage) and server CPU per cycle (/proc/PID/stat of
// the masters, when --server-pids is given).
"use strict";
const fs = require("fs");
const Redis = require("ioredis");
const Redlock = require("redlock").default;

const args = { node: [], pids: [], mode: "throughput", concurrency: 0, duration: 5, warmup: 1, ttl: 10000 };
for (let i = 2; i < process.argv.length; i += 2) {
  const a = process.argv[i], v = process.argv[i + 1];
  if (a === "--node") args.node.push(Number(v));
  else if (a === "--server-pids") args.pids = v.split(",").filter(Boolean).map(Number);
  else if (a === "--mode") args.mode = v;
  else if (a === "--concurrency") args.concurrency = Number(v);
  else if (a === "--duration") args.duration = Number(v);
  else if (a === "--warmup") args.warmup = Number(v);
  else if (a === "--ttl") args.ttl = Number(v);
  else { console.error(`node-bench: unknown option ${a}`); process.exit(2); }
}
if (args.node.length === 0) { console.error("node-bench: give --node PORT"); process.exit(2); }
if (!args.concurrency) args.concurrency = args.mode === "latency" ? 1 : 128;

const ticks = 100; // USER_HZ
function serverCpuS() {
  let t = 0;
  for (const pid of args.pids) {
    const s = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    t += (Number(f[11]) + Number(f[12])) / ticks; // utime, stime
  }
  return t;
}
function pkgVersion(name) {
  const p = require("path").join(__dirname, "node_modules", name, "package.json");
  return JSON.parse(fs.readFileSync(p, "utf8")).version;
}
function pct(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const clients = args.node.map(
    (port) => new Redis({ host: "127.0.0.1", port, enableAutoPipelining: true, lazyConnect: true }));
  await Promise.all(clients.map((c) => c.connect()));
  const redlock = new Redlock(clients, { driftFactor: 0.01, retryCount: 3, retryDelay: 200, retryJitter: 200 });
  redlock.on("error", () => {});
  const run = Math.random().toString(36).slice(2, 8);
  let measuring = false, stop = false, cycles = 0, errors = 0;
  const acq = [], cyc = [];
  async function worker(w) {
    const resource = `node:${run}:${w}`;
    while (!stop) {
      const t0 = process.hrtime.bigint();
      let lock;
      try {
        lock = await redlock.acquire([resource], args.ttl);
      } catch (e) {
        if (measuring) errors++;
        continue;
      }
      const t1 = process.hrtime.bigint();
      try {
        await lock.release();
      } catch (e) {
        if (measuring) errors++;
        continue;
      }
      const t2 = process.hrtime.bigint();
      if (measuring) {
        cycles++;
        if (acq.length < 2000000) {
          acq.push(Number(t1 - t0) / 1e6);
          cyc.push(Number(t2 - t0) / 1e6);
        }
      }
    }
  }
  const workers = [];
  for (let w = 0; w < args.concurrency; w++) workers.push(worker(w));
  await new Promise((r) => setTimeout(r, args.warmup * 1000));
  measuring = true;
  const cpu0 = process.cpuUsage(), s0 = serverCpuS(), w0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, args.duration * 1000));
  measuring = false;
  const wall = Number(process.hrtime.bigint() - w0) / 1e9;
  const cpu = process.cpuUsage(cpu0), s1 = serverCpuS();
  stop = true;
  await Promise.all(workers);
  await Promise.all(clients.map((c) => c.quit()));
  acq.sort((a, b) => a - b);
  cyc.sort((a, b) => a - b);
  const out = {
    mode: args.mode, impl: "node-redlock", redlock: pkgVersion("redlock"), ioredis: pkgVersion("ioredis"), node: process.version, N: args.node.length,
    C: args.concurrency, duration: Number(wall.toFixed(3)), cycles,
    cycles_per_s: Number((cycles / wall).toFixed(1)),
    acquire: { p50: pct(acq, 50), p99: pct(acq, 99), p999: pct(acq, 99.9) },
    cycle: { p50: pct(cyc, 50), p99: pct(cyc, 99), p999: pct(cyc, 99.9) },
    client_cpu_us_per_cycle: cycles ? Number(((cpu.user + cpu.system) / cycles).toFixed(2)) : null,
    server_cpu_us_per_cycle: cycles && args.pids.length ? Number((((s1 - s0) * 1e6) / cycles).toFixed(2)) : null,
    errors,
  };
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(1); });
