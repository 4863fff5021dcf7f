'use strict';
// Test helper: a real Redis Cluster of redis-server primaries on free loopback
// ports (--cluster-enabled yes, a bus port of its own picked free), joined
// without any cli: CLUSTER MEET from the first node to the others, CLUSTER
// ADDSLOTSRANGE of an equal share of the 16384 slots on each, then a wait
// (with a deadline) until every node says cluster_state:ok and knows the
// others.  Stopped by PID, never by name.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { command, freePort } = require('./masters');

const SLOTS = 16384;

// Resolves once the server on `port` is our child (INFO's process_id), or
// null when the child exited first (its port was taken meanwhile).
async function ours(port, child, exited) {
  let gone = false;
  exited.then(() => { gone = true; });
  const deadline = Date.now() + 10000;
  while (!gone && Date.now() < deadline) {
    try {
      const info = await command(port, 'INFO', 'server');
      if (info.includes(`process_id:${child.pid}\r\n`)) return true;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 20));
  }
  if (!gone) { child.kill('SIGKILL'); await exited; }
  return false;
}

async function startNode(dir, index) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const bus = await freePort();
    if (port === bus) continue;
    const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1',
      '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${index}-${port}.conf`),
      '--cluster-port', String(bus), '--cluster-node-timeout', '2000',
      '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (await ours(port, child, exited)) return { port, bus, child };
  }
  throw new Error('could not start a cluster node on a free port (5 attempts)');
}

async function waitUntil(pred, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await pred()) return;
    } catch { /* asked again */ }
    if (Date.now() >= deadline) throw new Error(`cluster: ${what} not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts and joins a cluster of n primaries; resolves once every node is ok. */
async function startCluster(n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-node-cluster-'));
  const nodes = [];
  const stop = async () => {
    await Promise.all(nodes.map((m) => new Promise((resolve) => {
      if (m.child.exitCode !== null || m.child.signalCode !== null) { resolve(); return; }
      m.child.once('exit', resolve);
      m.child.kill('SIGKILL');
    })));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < n; i++) nodes.push(await startNode(dir, i));
    for (const m of nodes.slice(1)) {
      const ok = await command(nodes[0].port, 'CLUSTER', 'MEET', '127.0.0.1', m.port, m.bus);
      if (ok !== 'OK') throw new Error(`CLUSTER MEET: ${ok}`);
    }
    for (let i = 0; i < n; i++) {
      const start = Math.floor((SLOTS * i) / n);
      const end = Math.floor((SLOTS * (i + 1)) / n) - 1;
      const ok = await command(nodes[i].port, 'CLUSTER', 'ADDSLOTSRANGE', start, end);
      if (ok !== 'OK') throw new Error(`CLUSTER ADDSLOTSRANGE: ${ok}`);
    }
    await waitUntil(async () => {
      for (const m of nodes) {
        const info = await command(m.port, 'CLUSTER', 'INFO');
        if (!info.includes('cluster_state:ok') || !info.includes(`cluster_known_nodes:${n}\r\n`)) return false;
      }
      return true;
    }, 30000, 'every node ok');
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes,
    /** Every node as a seed: redis-cluster://127.0.0.1:P0,127.0.0.1:P1,... */
    uri: `redis-cluster://${nodes.map((m) => `127.0.0.1:${m.port}`).join(',')}`,
    /** The index of the node that owns the key's slot (the slots never move here). */
    async owner(key) {
      const slot = await command(nodes[0].port, 'CLUSTER', 'KEYSLOT', key);
      return nodes.findIndex((_, i) => slot <= Math.floor((SLOTS * (i + 1)) / n) - 1);
    },
    /** Sends one command to node i. */
    command: (i, ...args) => command(nodes[i].port, ...args),
    /** DBSIZE of every node. */
    sizes: () => Promise.all(nodes.map((m) => command(m.port, 'DBSIZE'))),
    stop,
  };
}

module.exports = { startCluster };
