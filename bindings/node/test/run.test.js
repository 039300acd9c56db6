'use strict'
// run() and startServer(): exact counts, the result document, ticks, stop(), bad options,
// and a server under test in the same process.

const test = require('node:test')
const assert = require('node:assert/strict')
const { run, check, startServer } = require('../pelt.js')
const { startNginx, recordingServer } = require('./helpers.js')

test('run() sends exactly -n requests to startServer() and resolves to the --json result', async () => {
  const server = await startServer()
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
  const r = await run({ url: server.url, requests: 1000, connections: 4, threads: 2 })
  assert.equal(r.requests.sent, 1000)
  assert.equal(r.requests.completed, 1000)
  assert.equal(r.status['200'], 1000)
  assert.equal(r.stopped_by, 'requests')
  assert.equal(r.interrupted, false)
  assert.equal(r.connections, 4)
  assert.equal(typeof r.latency_us.p99, 'number')
  assert.equal(typeof r.histograms.latency_us, 'string', 'the histograms are embedded')
  assert.equal(await server.close(), 1000, 'close() resolves to the count served')
  assert.equal(server.served, 1000)
})

test('each second arrives as a tick, and the ticks add up to the result', async () => {
  const server = await startServer()
  const handle = run({ url: server.url, duration: '2500ms', connections: 2, threads: 1 })
  const ticks = []
  handle.on('tick', p => ticks.push(p))
  const r = await handle
  assert.ok(ticks.length >= 2, `ticks: ${ticks.length}`)
  assert.deepEqual(ticks.map(p => p.second), ticks.map((_, i) => i))
  assert.deepEqual(ticks.map(({ detail, ...point }) => point), r.timeline, 'the ticks are the timeline')
  assert.equal(ticks.reduce((n, p) => n + p.completed, 0), r.requests.completed)
  // Each tick's detail: codes, bytes; they add up to the result's.
  const sum = f => ticks.reduce((n, p) => n + f(p.detail), 0)
  assert.equal(sum(d => d.codes['200'] || 0), r.status['200'])
  assert.equal(sum(d => d.bytes_received), r.bytes.received)
  assert.equal(sum(d => d.bytes_sent), r.bytes.sent)
  await server.close()
})

test('monitor samples a process each second and says what limited the run', async () => {
  const server = await startServer()
  // The server runs in this very process: monitor it by its PID.
  const handle = run({ url: server.url, duration: '2s', connections: 2, threads: 1, monitor: process.pid })
  const ticks = []
  handle.on('tick', p => ticks.push(p))
  const r = await handle
  assert.equal(r.resources.monitored, `PID ${process.pid}: 1 process`)
  assert.ok(r.resources.server.cpu_mean > 0, JSON.stringify(r.resources))
  assert.ok(r.resources.server.rss_peak_bytes > 1 << 20)
  // pelt's workers are threads of this process, so the server's CPU counts theirs; a busy
  // machine may be the limit instead.
  assert.ok(['server-cpu', 'pelt', 'latency', 'network', 'host-cpu'].includes(r.resources.verdict.bottleneck))
  assert.ok(r.timeline.every(p => p.resources && p.resources.host.cores >= 1))
  assert.ok(ticks.some(p => p.resources), 'ticks carry the second\'s sample once it is in')
  await server.close()
  assert.throws(() => run({ url: server.url, requests: 1, monitor: 'no-such-server-here' }),
    { name: 'RangeError', message: /--monitor: no process is named/ })
})

test('stop() ends a run as Ctrl-C does, and the result is kept', async () => {
  const server = await startServer()
  const started = Date.now()
  const handle = run({ url: server.url, duration: '60s', connections: 2, threads: 1 })
  await new Promise(r => setTimeout(r, 700))
  const r = await handle.stop()
  assert.ok(Date.now() - started < 10000, 'stopped well before its 60 s')
  assert.equal(r.interrupted, true)
  assert.equal(r.stopped_by, 'signal')
  assert.ok(r.requests.completed > 0)
  assert.equal(r.requests.sent, r.requests.completed + r.requests.errors + r.requests.in_flight)
  assert.equal(await handle, r, 'awaiting again gives the same result')
  await server.close()
})

test('a stopped run does not keep Node alive', async () => {
  const { spawn } = require('node:child_process')
  const script = `
    const { run, startServer } = require(${JSON.stringify(require.resolve('../pelt.js'))})
    ;(async () => {
      const server = await startServer()
      const handle = run({ url: server.url, duration: '60s', connections: 2, threads: 1 })
      setTimeout(() => handle.stop(), 300)
      const r = await handle
      await server.close()
      console.log(r.interrupted)
    })()`
  const started = Date.now()
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', d => { out += d })
  const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
  const code = await new Promise(resolve => child.on('exit', resolve))
  clearTimeout(killer)
  assert.equal(code, 0, 'exited on its own, not killed')
  assert.equal(out.trim(), 'true')
  assert.ok(Date.now() - started < 10000)
})

test('the addon leaves signals to Node: Ctrl-C ends a process with a run going', async () => {
  const { spawn } = require('node:child_process')
  const script = `
    const { run, startServer } = require(${JSON.stringify(require.resolve('../pelt.js'))})
    ;(async () => {
      const server = await startServer()
      run({ url: server.url, duration: '60s', connections: 2, threads: 1 })
      console.log('running')
    })()`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise(resolve => child.stdout.once('data', resolve))
  const started = Date.now()
  child.kill('SIGINT')
  const killer = setTimeout(() => child.kill('SIGKILL'), 15000)
  const [code, signal] = await new Promise(resolve => child.on('exit', (c, s) => resolve([c, s])))
  clearTimeout(killer)
  assert.equal(signal, 'SIGINT', `Node's default: death by the signal (exit ${code})`)
  assert.ok(Date.now() - started < 5000)
})

test('bad options throw TypeError or RangeError with the CLI\'s line, before any traffic', async () => {
  const server = await startServer()
  const url = server.url
  const cases = [
    [{ url, bogus: 1 }, TypeError, "unknown option 'bogus'"],
    [{ url, connections: true }, TypeError, "option 'connections' must be a string or a number, not a boolean"],
    [{ url, rate: 'abc' }, RangeError, "invalid value 'abc' for '--rate <RATE>': expected requests per second like 500, 20k or 0.5"],
    [{ url, connections: 0 }, RangeError, "invalid value '0' for '--connections <N>': must be greater than zero"],
    [{ url, body: 'a', bodyFile: 'b' }, RangeError, "the argument '--body <TEXT>' cannot be used with '--body-file <PATH>'"],
    // The CLI refuses this; so does Node.js (the rules are checked once, by the one reader).
    [{ url, requests: 200, connections: 2, pipeline: 4, keepAlive: false }, RangeError, "the argument '--pipeline <D>' cannot be used with '--no-keepalive'"],
    [{ url, stages: '30x:1k' }, RangeError, "invalid value '30x:1k' for '--stages <STAGES>': stage 1 ('30x:1k'): duration expected a duration like 500ms, 10s, 2m or 1h"],
    [{ url: 'ftp://x/' }, RangeError, 'ftp'],
    [{ connections: 2 }, TypeError, "option 'url' is required"],
    [{ url, onTick: () => {} }, TypeError, "option 'onTick' must not be a function"],
    ['http://x/', TypeError, 'options must be an object'],
  ]
  for (const [options, type, says] of cases) {
    assert.throws(() => run(options), e => {
      assert.ok(e instanceof type, `${JSON.stringify(options)}: ${e}`)
      assert.ok(e.message.includes(says), `${JSON.stringify(options)}: ${e.message}`)
      assert.ok(!e.message.includes('\n'))
      return true
    })
    assert.throws(() => check(options), type)
  }
  assert.equal(await server.close(), 0, 'nothing was sent')
})

test('a server in the same process keeps serving while the engine loads it', async () => {
  const server = await recordingServer()
  const r = await run({ url: server.url + 'same-process', requests: 300, connections: 3, threads: 1 })
  assert.equal(r.requests.completed, 300)
  assert.equal(server.seen.length, 300)
  assert.ok(server.seen.every(s => s.url === '/same-process'))
  await server.close()
})

test('templates, stages and targets from JavaScript', async () => {
  const server = await recordingServer()
  const r = await run({
    url: server.url + 'user/{{seq}}',
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"id":{{seq}}}',
    requests: 50,
    connections: 2,
    threads: 2,
  })
  assert.equal(r.requests.completed, 50)
  const ids = server.seen.map(s => JSON.parse(s.body).id).sort((a, b) => a - b)
  assert.deepEqual(ids, [...Array(50).keys()], '{{seq}} is unique and complete')
  assert.ok(server.seen.every(s => s.url === `/user/${JSON.parse(s.body).id}`))
  server.seen.length = 0
  const t = await run({
    targets: [{ url: server.url + 'a' }, { method: 'DELETE', url: server.url + 'b', name: 'b' }],
    requests: 40,
    connections: 2,
  })
  assert.deepEqual(t.targets.map(x => [x.name, x.completed]), [['GET /a', 20], ['b', 20]])
  const s = await run({ url: server.url, rate: 0, stages: [{ duration: '1s', target: 200 }], connections: 2 })
  assert.equal(s.stages.of, 'rate')
  assert.equal(s.requests.completed, 100, 'the area under the ramp')
  await server.close()
})

test('run() against nginx: nginx logs exactly the requests pelt counts', async t => {
  const nginx = await startNginx()
  if (!nginx) return t.skip('nginx is not installed')
  try {
    const r = await run({ url: nginx.url, requests: 20000, connections: 16, threads: 2 })
    assert.equal(r.requests.completed, 20000)
    assert.equal(r.requests.errors, 0)
    const deadline = Date.now() + 5000
    while (nginx.logged() < 20000 && Date.now() < deadline) await new Promise(res => setTimeout(res, 50))
    assert.equal(nginx.logged(), 20000)
  } finally {
    nginx.stop()
  }
})

test('run() takes a scenario as an object, in the closed and the open loop', async () => {
  const server = await startServer()
  const scenario = {
    scenarios: [{
      once: [{ get: { url: '/login', name: 'login', capture: [{ status: true, as: 'code' }] } }],
      flow: [{ get: { url: '/items?after={{code}}', name: 'items', check: [{ status: 200, name: 'ok' }] } }]
    }]
  }
  const closed = await run({ url: server.url, scenario, requests: 200, connections: 4, threads: 1 })
  assert.equal(closed.requests.completed, 200)
  const steps = closed.targets.map(t => [t.name, t.completed]).sort()
  assert.deepEqual(steps, [['items', 196], ['login', 4]], 'each of the 4 users logged in once')
  assert.equal(closed.scenario.file, 'scenario')
  assert.deepEqual(closed.scenario.checks, [{ name: 'ok', passed: 196, failed: 0 }])
  assert.deepEqual(closed.scenario.captures, [{ name: 'login: code', found: 4, missing: 0 }])
  assert.equal(closed.scenario.iterations.completed, 196)
  const open = await run({
    url: server.url, scenario, rate: 400, requests: 100, connections: 2, maxConnections: 4, threads: 1
  })
  assert.equal(open.load_model, 'open')
  assert.equal(open.latency_from, 'due')
  assert.equal(open.requests.completed, 100)
  assert.equal(open.scenario.iterations.started, open.targets.find(t => t.name === 'items').sent)
  assert.equal(await server.close(), 300, 'the server saw every request')
})

test('run() reads server-sent events event by event: exact counts, limits and the marker', async () => {
  const server = await startServer({ sse: 12, sseInterval: '1ms', sseBody: 'openai' })
  const r = await run({ url: server.url, requests: 20, connections: 2, streamEnd: '[DONE]' })
  const s = r.event_streams
  assert.equal(s.streams, 20)
  assert.equal(s.events, 240, 'twelve tokens a stream, [DONE] not one of them')
  assert.equal(s.ended_by_marker, 20)
  assert.equal(typeof s.ttft_us.p99, 'number')
  assert.equal(typeof s.histograms.gap_us, 'string')
  const cut = await run({ url: server.url, requests: 10, connections: 2, streamLimit: 3 })
  assert.equal(cut.event_streams.cut, 10)
  assert.equal(cut.event_streams.events, 30)
  assert.equal(cut.requests.errors, 0, 'a cut stream is a response, not an error')
  await server.close()
})

test('run() on a ws:// URL: messages echoed by startServer({ ws: true }), counted exactly', async () => {
  const server = await startServer({ ws: true })
  const url = server.url.replace(/^http:/, 'ws:')
  const r = await run({ url, body: 'hello {{seq}}', requests: 500, connections: 5, threads: 1 })
  assert.equal(r.requests.completed, 500)
  assert.equal(r.status['101'], 500, 'each reply is booked with the upgrade status')
  assert.equal(r.websocket.upgrades, 5)
  assert.equal(r.websocket.messages_received, 500)
  assert.equal(r.websocket.pushed, 0)
  assert.equal(typeof r.websocket.histograms.upgrade_us, 'string')
  await server.close()
})

test('run() replays targets at their recorded times ("t", ms), in time order', async () => {
  const server = await startServer()
  const targets = [
    { url: server.url + 'b', t: 40 },
    { url: server.url + 'a', t: 0 },
    { method: 'POST', url: server.url + 'c', body: 'x', t: 60 }
  ]
  const r = await run({ targets, replay: true, replaySpeed: '2x', connections: 2, threads: 1 })
  assert.equal(r.requests.completed, 3)
  assert.equal(r.latency_from, 'due')
  assert.deepEqual(r.targets.map(t => [t.name, t.sent]), [['GET /a', 1], ['GET /b', 1], ['POST /c', 1]])
  assert.ok(r.notes.some(n => n.startsWith('replay of 3 recorded requests')), r.notes.join('\n'))
  await server.close()
})
