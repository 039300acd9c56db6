'use strict'
// What the tests share: nginx from Debian on a fresh port (started by the test, ended by
// its PID), and a Node HTTP server in the test's own process that records what it served.

const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

/** A port that was free a moment ago (nginx cannot bind port 0 and say which it got). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

function which(bin) {
  for (const dir of ['/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    const p = path.join(dir, bin)
    if (fs.existsSync(p)) return p
  }
  return null
}

/** Can a connection be made to the port yet? */
function listening(port) {
  return new Promise(resolve => {
    const c = net.connect(port, '127.0.0.1')
    c.once('connect', () => { c.destroy(); resolve(true) })
    c.once('error', () => resolve(false))
  })
}

/**
 * nginx with one worker and keep-alive without a request limit, writing an access log;
 * null where nginx is not installed (outside CI: the caller skips; under CI it must be there).
 */
async function startNginx() {
  const bin = which('nginx')
  if (!bin) {
    if (process.env.CI) throw new Error('nginx is not installed (.ci/run installs nginx-light)')
    return null
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pelt-node-nginx-'))
  const port = await freePort()
  fs.writeFileSync(path.join(dir, 'nginx.conf'), `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
    access_log ${dir}/access.log;
    keepalive_requests 1000000000;
    client_body_temp_path ${dir}/body;
    proxy_temp_path ${dir}/proxy;
    fastcgi_temp_path ${dir}/fastcgi;
    uwsgi_temp_path ${dir}/uwsgi;
    scgi_temp_path ${dir}/scgi;
    server {
        listen 127.0.0.1:${port};
        location / { return 200 "OK"; }
    }
}
`)
  const child = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'ignore' })
  const deadline = Date.now() + 10000
  while (!(await listening(port))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill()
      throw new Error(`nginx did not listen on ${port}`)
    }
    await new Promise(r => setTimeout(r, 50))
  }
  return {
    url: `http://127.0.0.1:${port}/`,
    /** Lines in the access log: one per request nginx answered. */
    logged() {
      const log = path.join(dir, 'access.log')
      if (!fs.existsSync(log)) return 0
      return fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length
    },
    stop() {
      child.kill('SIGTERM')
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A Node server in this process that answers 200 and records each request's method, URL
 * and body: the engine must not block Node's event loop while it loads it. */
async function recordingServer() {
  const seen = []
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', d => { body += d })
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, body, headers: req.headers })
      res.end('ok')
    })
  })
  server.keepAliveTimeout = 60000
  await new Promise(r => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    seen,
    close: () => new Promise(r => server.close(r)),
  }
}

/**
 * Outcomes of the same programs on the original package (`control`) and on pelt, each
 * {name: {ok, message}}: prints them side by side (under `title`, the original's name) and
 * returns the problems: a program that passes on the original and not on pelt, unless listed
 * in `gaps` (name: why), and a listed gap that passes now.
 */
function compareOutcomes(title, control, pelt, gaps) {
  const mark = r => (r === undefined ? 'missing' : r.ok ? 'pass' : 'FAIL')
  const names = Object.keys(control).sort()
  const rows = names.map(n => `${mark(control[n]).padEnd(title.length + 1)} ${mark(pelt[n]).padEnd(7)} ${n}`)
  const passed = r => Object.values(r).filter(x => x.ok).length
  console.log(`${title}  pelt    (${title} ${passed(control)}/${names.length}, pelt ${passed(pelt)}/${names.length})\n${rows.join('\n')}`)
  const problems = []
  for (const [name, r] of Object.entries(control)) {
    if (!r.ok) continue
    const p = pelt[name]
    if (gaps[name] && p && p.ok) problems.push(`${name}: passes now; take it off the gaps`)
    if (!gaps[name] && !(p && p.ok)) problems.push(`${name}: ${p ? p.message : 'did not run'}`)
  }
  return problems
}

module.exports = { startNginx, recordingServer, freePort, execFileSync, compareOutcomes }
