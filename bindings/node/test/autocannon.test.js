'use strict'
// pelt/autocannon against autocannon 9 itself (a pinned dev dependency) as the control: the
// same options on the same server give results of the same shape and the same counts, the
// same tables from printResult, and what pelt cannot do is refused with a TypeError that says
// why.

const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { pathToFileURL } = require('node:url')
const autocannon = require('../autocannon.js')
const real = require('autocannon')
const { recordingServer } = require('./helpers.js')

const CLI = path.join(__dirname, '..', 'bin', 'pelt-autocannon.js')

/** The keys of an object and of its statistics, sorted: a result's shape. */
function shape(result) {
  const keys = o => Object.keys(o).sort()
  return { top: keys(result), latency: keys(result.latency), requests: keys(result.requests), throughput: keys(result.throughput) }
}

test('the same amount on the same server: the same result shape, counts, status codes and bytes as autocannon', async () => {
  const server = await recordingServer()
  try {
    const options = { url: server.url, amount: 2000, connections: 4, title: 'same', headers: { 'x-run': 'a' } }
    const control = await real(options)
    const servedByControl = server.seen.length
    const result = await autocannon(options)
    assert.deepEqual(shape(result), shape(control))
    assert.equal(server.seen.length - servedByControl, 2000, 'pelt sent exactly amount requests')
    for (const r of [control, result]) {
      assert.equal(r.requests.sent, 2000)
      assert.equal(r.requests.total, 2000)
      assert.equal(r.latency.totalCount, 2000)
      assert.equal(r['2xx'], 2000)
      assert.equal(r.title, 'same')
      assert.deepEqual(r.statusCodeStats, { 200: { count: 2000 } })
      assert.ok(r.latency.p50 <= r.latency.p99 && r.latency.p99 <= r.latency.max)
    }
    // autocannon counts whole milliseconds; pelt has the microseconds.
    assert.ok(result.latency.min > 0)
    // Both read every byte of the same responses.
    assert.equal(result.throughput.total, control.throughput.total)
    assert.ok(server.seen.slice(servedByControl).every(r => r.headers['x-run'] === 'a'))
    assert.ok(result.start instanceof Date && result.finish >= result.start)
  } finally {
    await server.close()
  }
})

test('printResult draws the same tables as autocannon for the same result', async () => {
  const server = await recordingServer()
  try {
    const result = await autocannon({ url: server.url, duration: 2, connections: 2 })
    const stream = { isTTY: false, write() {} }
    for (const opts of [{}, { renderLatencyTable: true }, { renderStatusCodes: true }]) {
      const ours = autocannon.printResult(result, { outputStream: stream, ...opts })
      const theirs = real.printResult(result, { outputStream: stream, ...opts })
      assert.equal(ours, theirs)
    }
    assert.match(autocannon.printResult(result), /│ Req\/Sec/)
  } finally {
    await server.close()
  }
})

test('an instance emits start, a tick a second and done; stop() ends a run early with its result', async () => {
  const server = await recordingServer()
  try {
    const events = []
    const instance = autocannon({ url: server.url, duration: 30, connections: 2 })
    instance.on('start', () => events.push('start'))
    instance.on('tick', t => {
      events.push('tick')
      assert.ok(Number.isInteger(t.counter) && Number.isInteger(t.bytes))
      instance.stop()
    })
    instance.on('done', () => events.push('done'))
    const result = await instance
    assert.equal(events[0], 'start')
    assert.ok(events.includes('tick'))
    assert.equal(events[events.length - 1], 'done')
    assert.ok(result.duration < 30, `stopped early (${result.duration}s)`)
    assert.equal(result.requests.total, server.seen.length)
  } finally {
    await server.close()
  }
})

test('setupClient shapes the requests; clients and the instance get sampled responses', async () => {
  const server = await recordingServer()
  try {
    const bodies = []
    const responses = []
    const result = await new Promise((resolve, reject) => {
      const instance = autocannon({
        url: server.url,
        amount: 50,
        connections: 2,
        method: 'POST',
        setupClient: client => {
          client.setHeadersAndBody({ 'x-client': 'yes' }, 'hello')
          client.on('body', b => bodies.push(b.toString()))
        },
      }, (e, r) => (e ? reject(e) : resolve(r)))
      instance.on('response', (client, status, bytes, ms) => responses.push([typeof client.setBody, status, bytes, ms]))
    })
    assert.equal(result.requests.sent, 50)
    assert.equal(server.seen.length, 50)
    assert.ok(server.seen.every(r => r.method === 'POST' && r.body === 'hello' && r.headers['x-client'] === 'yes'))
    assert.equal(bodies.length, 50)
    assert.ok(bodies.every(b => b === 'ok'))
    assert.equal(responses.length, 50)
    assert.ok(responses.every(([fn, status, bytes, ms]) => fn === 'function' && status === 200 && bytes > 2 && ms > 0))
  } finally {
    await server.close()
  }
})

test('requests run in sequence, setupRequest built ahead with its context, as autocannon sends them', async () => {
  const server = await recordingServer()
  try {
    const options = {
      url: server.url,
      connections: 1,
      amount: 6,
      initialContext: { n: 0 },
      requests: [
        { method: 'POST', path: '/login', body: 'user' },
        { path: '/items', setupRequest: (req, context) => ({ ...req, path: `/items/${++context.n}` }) },
      ],
    }
    await real(options)
    const control = server.seen.splice(0).map(r => `${r.method} ${r.url} ${r.body}`)
    const result = await autocannon(options)
    const ours = server.seen.map(r => `${r.method} ${r.url} ${r.body}`)
    assert.deepEqual(ours, control)
    assert.deepEqual(ours.slice(0, 2), ['POST /login user', 'GET /items/1 '])
    assert.equal(result.requests.sent, 6)
  } finally {
    await server.close()
  }
})

test("bad options: autocannon's own errors, and what pelt cannot honour as a TypeError that names it", async () => {
  const url = 'http://127.0.0.1:9/'
  // autocannon's validation: the same message through the callback, and as a rejection.
  for (const [options, message] of [
    [{ url, connections: 0 }, 'connections can not be less than 1'],
    [{ url, duration: -1 }, 'duration can not be less than 0'],
    [{ url, amount: 0 }, 'amount can not be less than 1'],
    [{}, 'url or socketPath option required'],
  ]) {
    const theirs = await new Promise(resolve => real(options, e => resolve(e)))
    const ours = await new Promise(resolve => autocannon(options, e => resolve(e)))
    assert.equal(ours.message, theirs.message)
    await assert.rejects(autocannon(options), { message })
  }
  for (const [options, name] of [
    [{ url, requests: [{ onResponse: () => {} }] }, 'requests[].onResponse'],
    [{ url, sampleInt: 100 }, 'sampleInt'],
    [{ url, reconnectRate: 10 }, 'reconnectRate'],
    [{ url, overallRate: 10, ignoreCoordinatedOmission: true }, 'ignoreCoordinatedOmission'],
  ]) {
    await assert.rejects(autocannon(options), e => e instanceof TypeError && e.message.includes(`option '${name}'`), name)
  }
})

test('verifyBody and expectBody check the responses and count mismatches, as autocannon does', async () => {
  const server = await recordingServer()
  try {
    for (const options of [
      { url: server.url, amount: 200, connections: 2, verifyBody: body => body === 'ok' },
      { url: server.url, amount: 200, connections: 2, verifyBody: body => body !== 'ok' },
      { url: server.url, amount: 200, connections: 2, expectBody: 'nope' },
    ]) {
      const control = await real(options)
      const result = await autocannon(options)
      assert.equal(result.mismatches, control.mismatches)
      // Below 4096 responses a second per thread, every response is checked.
      assert.equal(result.bodiesChecked, 200)
      assert.equal(result.bodiesUnchecked, 0)
    }
    await assert.rejects(autocannon({ url: server.url, expectBody: 'ok', requests: [{}] }), { message: 'expectBody cannot be used in conjunction with requests' })
  } finally {
    await server.close()
  }
})

test('URLs on two servers: each gets the connections and the share of requests autocannon gives it, one result', async () => {
  const a = await recordingServer()
  const b = await recordingServer()
  try {
    const options = { url: [a.url, `${b.url}two`], connections: 3, amount: 100 }
    await real(options)
    const control = [a.seen.splice(0).length, b.seen.splice(0).length]
    const ticks = []
    const instance = autocannon(options)
    instance.on('tick', t => ticks.push(t))
    const result = await instance
    assert.deepEqual([a.seen.length, b.seen.length], control)
    assert.deepEqual(control, [67, 33])
    assert.ok(b.seen.every(r => r.url === '/two'))
    assert.equal(result.requests.sent, 100)
    assert.equal(result.latency.totalCount, 100)
    assert.equal(result['2xx'], 100)
    assert.equal(ticks.reduce((n, t) => n + t.counter, 0), 100)
    assert.equal(result.pelt.length, 2)
  } finally {
    await a.close()
    await b.close()
  }
})

test('skipAggregateResult results merge exactly with aggregateResult', async () => {
  const server = await recordingServer()
  try {
    const options = { url: server.url, amount: 300, connections: 3, skipAggregateResult: true }
    const a = await autocannon(options)
    const b = await autocannon(options)
    const merged = autocannon.aggregateResult([a, b], options)
    assert.equal(merged.latency.totalCount, 600)
    assert.equal(merged.requests.sent, 600)
    assert.equal(merged.requests.total, 600)
    assert.equal(merged['2xx'], 600)
    assert.equal(merged.samples, a.samples + b.samples)
    assert.throws(() => autocannon.aggregateResult(a), /"results" must be an array/)
  } finally {
    await server.close()
  }
})

test('a form is sent as multipart/form-data, and a warm-up runs first', async () => {
  const server = await recordingServer()
  try {
    const result = await autocannon({ url: server.url, amount: 3, connections: 1, form: { name: { type: 'text', value: 'pelt' } }, warmup: { connections: 1, duration: 1 } })
    assert.ok(result.warmup && result.warmup.requests.sent > 0)
    const sent = server.seen.slice(-3)
    assert.ok(sent.every(r => r.method === 'POST' && /^multipart\/form-data; boundary=/.test(r.headers['content-type'])))
    assert.match(sent[0].body, /Content-Disposition: form-data; name="name"\r\n\r\npelt\r\n/)
  } finally {
    await server.close()
  }
})

/** Runs pelt-autocannon; resolves to {code, stdout, stderr}. */
function cli(args) {
  return new Promise(resolve => {
    execFile(process.execPath, [CLI, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr })
    })
  })
}

test("pelt-autocannon takes autocannon's flags and prints its tables, or its JSON with -j", async () => {
  const server = await recordingServer()
  try {
    const table = await cli(['-c', '2', '-a', '100', '-H', 'x-a=1', '-H', 'x-b: 2', '-m', 'PUT', '-b', 'data', '--renderStatusCodes', server.url])
    assert.equal(table.code, 0, table.stderr)
    assert.match(table.stderr, /Running 100 requests test @ /)
    assert.match(table.stderr, /│ Latency │/)
    assert.match(table.stderr, /│ 200  │ 100   │/)
    assert.match(table.stderr, /100 requests in [\d.]+s, [\d.]+ \w?B read/)
    assert.equal(server.seen.length, 100)
    assert.ok(server.seen.every(r => r.method === 'PUT' && r.body === 'data' && r.headers['x-a'] === '1' && r.headers['x-b'] === '2'))
    const json = await cli(['-j', '-c', '2', '-a', '10', server.url])
    assert.equal(json.code, 0, json.stderr)
    const result = JSON.parse(json.stdout.trim())
    assert.equal(result.requests.sent, 10)
    const mismatched = await cli(['-c', '1', '-a', '20', '-E', 'nope', server.url])
    assert.match(mismatched.stderr, /20 requests with mismatched body/)
    const refused = await cli(['-x', server.url])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /--excludeErrorStats is not supported/)
  } finally {
    await server.close()
  }
})

test('pelt/autocannon imports as an ES module and as CommonJS', async () => {
  const esm = await import(pathToFileURL(path.join(__dirname, '..', 'autocannon.mjs')).href)
  assert.equal(esm.default, autocannon)
  assert.equal(esm.printResult, autocannon.printResult)
  assert.equal(typeof esm.track, 'function')
  assert.equal(typeof esm.aggregateResult, 'function')
  assert.equal(require('pelt/autocannon'), autocannon)
})
