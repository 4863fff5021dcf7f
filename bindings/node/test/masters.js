'use strict';
// Test helper: real redis-server masters on free loopback ports, started and
// stopped by PID (never by name), and a minimal RESP client for inspection.
const { spawn } = require('node:child_process');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Sends one command and resolves with its parsed reply (string, number, null, array). */
function command(port, ...args) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    sock.setTimeout(2000, () => sock.destroy(new Error('timeout')));
    sock.on('error', reject);
    sock.on('connect', () => {
      let out = `*${args.length}\r\n`;
      for (const a of args) { const s = String(a); out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`; }
      sock.write(out);
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parse(buf, 0);
      if (r) { sock.end(); if (r.err) reject(new Error(r.err)); else resolve(r.value); }
    });
  });
}

function parse(buf, off) {
  const eol = buf.indexOf('\r\n', off);
  if (eol < 0) return null;
  const line = buf.toString('utf8', off + 1, eol);
  const next = eol + 2;
  switch (String.fromCharCode(buf[off])) {
    case '+': return { value: line, end: next };
    case '-': return { err: line, end: next };
    case ':': return { value: Number(line), end: next };
    case '$': {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      if (buf.length < next + n + 2) return null;
      return { value: buf.toString('utf8', next, next + n), end: next + n + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      const arr = [];
      let pos = next;
      for (let i = 0; i < n; i++) {
        const r = parse(buf, pos);
        if (!r) return null;
        arr.push(r.value);
        pos = r.end;
      }
      return { value: arr, end: pos };
    }
    default: throw new Error('bad reply');
  }
}

// Runs redis-server (or `server`: another executable taking its arguments,
// e.g. a Valkey) on a fresh free port and resolves once the server answering
// there is ours (INFO's process_id is our child's PID).  A free port can be
// taken by another process before the server binds it: the child then exits,
// and another port is tried.
async function startMaster(dir, taken, server) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    if (taken.includes(port)) continue;
    const child = spawn(server, ['--port', String(port), '--bind', '127.0.0.1',
      '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let gone = false;
    exited.then(() => { gone = true; });
    const deadline = Date.now() + 10000;
    while (!gone && Date.now() < deadline) {
      try {
        const info = await command(port, 'INFO', 'server');
        if (info.includes(`process_id:${child.pid}\r\n`)) {
          return { port, child, uri: `redis://127.0.0.1:${port}` };
        }
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 20));
    }
    if (!gone) { child.kill('SIGKILL'); await exited; }
  }
  throw new Error('could not start redis-server on a free port (5 attempts)');
}

async function startMasters(n, server = 'redis-server') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-node-'));
  const masters = [];
  for (let i = 0; i < n; i++) {
    masters.push(await startMaster(dir, masters.map((m) => m.port), server));
  }
  return {
    masters,
    uris: masters.map((m) => m.uri),
    /** Runs a command on every master. */
    all: (...args) => Promise.all(masters.map((m) => command(m.port, ...args))),
    pause: (i) => process.kill(masters[i].child.pid, 'SIGSTOP'),
    resume: (i) => process.kill(masters[i].child.pid, 'SIGCONT'),
    async stop() {
      await Promise.all(masters.map((m) => new Promise((resolve) => {
        if (m.child.exitCode !== null || m.child.signalCode !== null) { resolve(); return; }
        m.child.once('exit', resolve);
        try { process.kill(m.child.pid, 'SIGCONT'); } catch { /* gone */ }
        m.child.kill('SIGKILL');
      })));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

module.exports = { startMasters, command, freePort };
