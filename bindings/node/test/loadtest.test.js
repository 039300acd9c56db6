'use strict'
// loadTest(): the examples of loadtest 8's API documentation (doc/api.md), run on pelt.

const test = require('node:test')
const assert = require('node:assert/strict')
const { loadTest, startServer } = require('../loadtest.js')
const { recordingServer } = require('./helpers.js')

/** Runs `f` with console.info captured; returns what it printed. */
async function printed(f) {
  const lines = []
  const info = console.info
  console.info = (...args) => lines.push(require('node:util').format(...args))
  try {
    await f()
  } finally {
    console.info = info
  }
  return lines.join('\n')
}

test('"Invoke Load Test": await loadTest({url, maxRequests}) and result.show()', async () => {
  const server = await startServer({ port: 0 })
  const options = { url: server.url, maxRequests: 1000 }
  const result = await loadTest(options)
  assert.equal(result.totalRequests, 1000)
  assert.equal(result.totalErrors, 0)
  assert.equal(result.concurrency, 10, "loadtest 8's default concurrency")
  assert.equal(result.clients, 10)
  assert.ok(result.effectiveRps > 0 && result.rps === result.effectiveRps)
  assert.ok(result.elapsedSeconds > 0 && result.totalTimeSeconds === result.elapsedSeconds)
  assert.ok(result.meanLatencyMs > 0 && result.maxLatencyMs >= result.meanLatencyMs)
  const p = result.percentiles
  assert.deepEqual(Object.keys(p), ['50', '90', '95', '99'])
  assert.ok(p[50] <= p[90] && p[90] <= p[95] && p[95] <= p[99] && p[99] <= result.maxLatencyMs)
  assert.deepEqual(result.errorCodes, {})
  const text = await printed(() => result.show())
  assert.match(text, /Completed requests: {2}1000/)
  assert.match(text, /Percentage of requests served within a certain time/)
  assert.match(text, / {2}95% {6}[\d.]+ ms/)
  assert.equal(result.pelt.requests.sent, 1000, "pelt's own result rides along")
  assert.equal(await server.close(), 1000, 'pelt never sends more than maxRequests')
})

test('README "Complete Example", each run scaled from 20 s to 1 s', async () => {
  const server = await startServer({ port: 0 })
  // loadtest http://localhost:7357/ -t 20 -c 10
  const closed = await loadTest({ url: server.url, maxSeconds: 1, concurrency: 10 })
  assert.ok(closed.totalRequests > 0 && closed.totalErrors === 0)
  assert.equal(closed.clients, 10)
  // ... -t 20 -c 10 --rps 1000: the rate holds whatever the server does
  const paced = await loadTest({ url: server.url, maxSeconds: 1, concurrency: 10, requestsPerSecond: 1000 })
  assert.ok(paced.totalRequests >= 950 && paced.totalRequests <= 1001, `${paced.totalRequests}`)
  // ... -t 20 -c 10 -k: keep-alive is faster than a connection per request
  const kept = await loadTest({ url: server.url, maxSeconds: 1, concurrency: 10, agentKeepAlive: true })
  assert.equal(kept.pelt.keep_alive, true)
  assert.equal(closed.pelt.keep_alive, false, "loadtest's default: no keep-alive agent")
  assert.ok(kept.pelt.connections_opened <= 10)
  assert.ok(closed.pelt.connections_opened >= closed.totalRequests - 10)
  await server.close()
})

test('the legacy callback form: loadTest(options, function(error, result))', async () => {
  const server = await startServer({ port: 0 })
  const result = await new Promise((resolve, reject) => {
    const returned = loadTest({ url: server.url, maxRequests: 100 }, (error, r) =>
      error ? reject(error) : resolve(r))
    assert.equal(returned, undefined)
  })
  assert.equal(result.totalRequests, 100)
  await server.close()
})

test('"Start Test Server": startServer({port, delay}) ... server.close()', async () => {
  const server = await startServer({ port: 0, delay: 20 })
  const result = await loadTest({ url: server.url, maxRequests: 50, concurrency: 5 })
  assert.equal(result.totalRequests, 50)
  assert.ok(result.percentiles[50] >= 20, 'each answer waited its 20 ms delay')
  assert.ok(result.percentiles[50] < 1000, 'milliseconds, as loadtest')
  assert.equal(await server.close(), 50)
  // The legacy callback form, and loadtest's error and percent.
  let legacy
  await new Promise((resolve, reject) => {
    legacy = startServer({ port: 0, error: 503 }, e => (e ? reject(e) : resolve()))
  })
  assert.equal((await loadTest({ url: legacy.url, maxRequests: 5 })).errorCodes[503], 5)
  await legacy.close()
  const failing = await startServer({ port: 0, error: 404 })
  const r = await loadTest({ url: failing.url, maxRequests: 10 })
  assert.deepEqual(r.errorCodes, { 404: 10 })
  await failing.close()
})

test('errors: statuses of 400 and more, and failed connections, by code', async () => {
  const server = await startServer({ port: 0, error: 500, percent: 50 })
  const result = await loadTest({ url: server.url, maxRequests: 400, concurrency: 4 })
  const fives = result.pelt.status['500'] || 0
  assert.ok(fives > 100 && fives < 300, `${fives} of 400 answered 500`)
  assert.equal(result.totalErrors, fives)
  assert.deepEqual(result.errorCodes, { 500: fives })
  assert.equal(result.totalRequests, 400)
  await server.close()
  // Nothing listens there any more: every request is a connection error.
  const refused = await loadTest({ url: server.url, maxRequests: 20, concurrency: 2 })
  assert.equal(refused.totalErrors, 20)
  // loadtest keys every failure without a response as -1; pelt's kind is beside it.
  assert.deepEqual(refused.errorCodes, { '-1': 20 })
  assert.deepEqual(refused.pelt.errors, { refused: 20 })
})

test('indexParam, body objects, contentType, headers and cookies reach the server', async () => {
  const server = await recordingServer()
  const result = await loadTest({
    url: server.url + 'user/value',
    indexParam: '\\bvalue\\b',
    method: 'POST',
    body: { userid: 'value', other: 123 },
    contentType: 'application/json',
    headers: { 'x-test': 'yes' },
    cookies: ['a=1', 'b=2'],
    maxRequests: 30,
    concurrency: 3,
    agentKeepAlive: true,
  })
  assert.equal(result.totalRequests, 30)
  assert.equal(result.agent, 'keepalive')
  const ids = server.seen.map(s => s.url).sort()
  assert.equal(new Set(ids).size, 30, 'each URL has its own index')
  for (const s of server.seen) {
    const index = s.url.split('/').pop()
    assert.deepEqual(JSON.parse(s.body), { userid: index, other: 123 })
    assert.equal(s.headers['content-type'], 'application/json')
    assert.equal(s.headers['x-test'], 'yes')
    assert.equal(s.headers.cookie, 'a=1; b=2')
  }
  await server.close()
})

test('requestsPerSecond: an open loop at that rate', async () => {
  const server = await startServer({ port: 0 })
  const result = await loadTest({ url: server.url, requestsPerSecond: 500, maxRequests: 100 })
  assert.equal(result.totalRequests, 100)
  assert.equal(result.pelt.load_model, 'open')
  assert.equal(result.requestsPerSecond, 500)
  await server.close()
})

test('requestGenerator (sample/request-generator.js): requests built ahead, then sent in turn', async () => {
  const server = await recordingServer()
  let calls = 0
  const result = await loadTest({
    url: server.url,
    concurrency: 5,
    method: 'POST',
    body: '',
    maxRequests: 30,
    requestGeneratorCount: 3,
    requestGenerator: (params, options, client, callback) => {
      const message = '{"hi": "ho"}'
      options.headers['Content-Length'] = message.length
      options.headers['Content-Type'] = 'application/json'
      options.body = 'YourPostData'
      options.path = `/generated/${calls++}`
      const request = client(options, callback)
      request.write(message)
      return request
    },
  })
  assert.equal(calls, 3, 'called ahead of the run, requestGeneratorCount times')
  assert.equal(result.totalRequests, 30)
  const paths = server.seen.map(s => s.url).sort()
  assert.deepEqual([...new Set(paths)], ['/generated/0', '/generated/1', '/generated/2'])
  for (const p of ['/generated/0', '/generated/1', '/generated/2']) {
    assert.equal(paths.filter(x => x === p).length, 10, 'in turn: each one 30 / 3 times')
  }
  assert.ok(server.seen.every(s => s.method === 'POST' && s.body === '{"hi": "ho"}'))
  assert.ok(server.seen.every(s => s.headers['content-type'] === 'application/json'))
  await server.close()
})

test('statusCallback gets sampled requests, once a second, before the result', async () => {
  const server = await startServer({ port: 0, error: 500, percent: 20 })
  const seen = []
  const result = await loadTest({
    url: server.url + 'item/value',
    indexParamLiteral: 'value',
    maxRequests: 500,
    concurrency: 4,
    statusCallback: (error, r) => seen.push([error, r]),
  })
  assert.equal(result.totalRequests, 500)
  assert.equal(seen.length, 500, 'every request, by default')
  assert.equal(result.statusCallbackDropped, 0)
  const indexes = seen.map(([, r]) => r.requestIndex).sort((a, b) => a - b)
  assert.deepEqual(indexes, [...Array(500).keys()])
  for (const [error, r] of seen) {
    assert.equal(r.path, `/item/${r.requestIndex}`)
    assert.equal(r.method, 'GET')
    assert.equal(r.host, '127.0.0.1')
    assert.ok(r.requestElapsed >= 0)
    assert.equal(typeof r.instanceIndex, 'number')
    assert.equal(Boolean(error), r.statusCode === 500, 'an error for each 500')
  }
  const fives = seen.filter(([, r]) => r.statusCode === 500).length
  assert.equal(fives, result.errorCodes['500'])
  // Sampling: every 10th request per thread.
  const sampled = []
  await loadTest({
    url: server.url, maxRequests: 400, concurrency: 4, statusSampleEvery: 10,
    statusCallback: (e, r) => sampled.push(r),
  })
  assert.ok(sampled.length >= 36 && sampled.length <= 40, `${sampled.length} of 400 sampled`)
  await server.close()
})

test('options pelt cannot honour throw a TypeError naming them and why', async () => {
  const refused = (options, why) => assert.rejects(loadTest({ url: 'http://127.0.0.1:1/', ...options }), e => {
    assert.ok(e instanceof TypeError, String(e))
    assert.match(e.message, why)
    return true
  })
  await refused({ proxy: 'http://127.0.0.1:3128' }, /option 'proxy' is not supported: .*proxy/)
  await refused({ contentInspector: () => {} }, /option 'contentInspector' is not supported: .*bodies/)
  await refused({ url: 'https://127.0.0.1:1/', secureProtocol: 'TLSv1_method' }, /TLSv1_method is not supported: .*TLS 1.2 and 1.3 only/)
  await refused({ statusCallback: 5 }, /option 'statusCallback' must be a function/)
  await refused({ requestGenerator: 5 }, /option 'requestGenerator' must be a function or a module path/)
  await refused({ url: 'ftp://127.0.0.1:1/' }, /must be http:\/\/, https:\/\/, ws:\/\/, or wss:\/\//)
  await assert.rejects(loadTest({ maxRequests: 1 }), /Missing URL/)
})

test('a name loadtest does not know is ignored, as loadtest ignores it, with a warning', async () => {
  const warnings = []
  const warn = w => warnings.push(w.message)
  process.on('warning', warn)
  const server = await startServer({ port: 0 })
  const result = await loadTest({ url: server.url, maxRequests: 5, bogus: 1 })
  await new Promise(resolve => setImmediate(resolve))
  process.off('warning', warn)
  await server.close()
  assert.equal(result.totalRequests, 5)
  assert.deepEqual(warnings, ["option 'bogus' is not a loadtest option; ignored, as loadtest ignores it"])
})

test("loadtest's header forms, cookies as a text, and its default accept and user-agent headers", async () => {
  const { url, seen: requests, close } = await recordingServer()
  const texts = { url, maxRequests: 2, concurrency: 1, headers: ['X-A:1', 'x-b: two'], cookies: 'a=1; b=2' }
  await loadTest(texts)
  await loadTest({ url, maxRequests: 1, concurrency: 1, headers: 'X-C:3' })
  await close()
  const [first, , third] = requests
  assert.equal(first.headers['x-a'], '1')
  assert.equal(first.headers['x-b'], 'two')
  assert.equal(first.headers.cookie, 'a=1; b=2')
  assert.equal(first.headers.accept, '*/*')
  assert.match(first.headers['user-agent'], /^pelt\/[\d.]+ \(loadtest\)$/)
  assert.equal(third.headers['x-c'], '3')
  assert.ok(!('0' in first.headers), 'no header named after an index')
})

test('server.close(callback) calls back once the server has stopped', async () => {
  const server = await startServer({ port: 0 })
  const closed = await new Promise(resolve => server.close(resolve))
  assert.equal(closed, null)
  // It has stopped: nothing listens there now.
  const refused = await loadTest({ url: server.url, maxRequests: 1 })
  assert.deepEqual(refused.errorCodes, { '-1': 1 })
})

test("startServer's logger and shouldErrorCustom see each request with its body (a Node.js server)", async () => {
  const seen = []
  const server = await startServer({
    port: 0,
    quiet: true,
    logger: request => seen.push(request.body),
    shouldErrorCustom: request => request.body.includes('bad'),
  })
  const ok = await loadTest({ url: server.url, maxRequests: 3, concurrency: 1, postBody: 'good' })
  const bad = await loadTest({ url: server.url, maxRequests: 2, concurrency: 1, postBody: 'bad' })
  await new Promise(resolve => server.close(resolve))
  assert.deepEqual(seen, ['good', 'good', 'good', 'bad', 'bad'])
  assert.equal(ok.totalErrors, 0)
  assert.deepEqual(bad.errorCodes, { 500: 2 })
  assert.ok(ok.minLatencyMs > 0 && ok.minLatencyMs <= ok.meanLatencyMs)
})

test("ES modules: loadtest's documented import line works for pelt/loadtest, and pelt's for pelt", async () => {
  const { execFileSync } = require('node:child_process')
  const code = "import { loadTest, startServer } from 'pelt/loadtest'; import { run } from 'pelt'; " +
    'console.log(typeof loadTest, typeof startServer, typeof run)'
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: __dirname, encoding: 'utf8' })
  assert.equal(out.trim(), 'function function function')
})

test('statusCallback results carry the response body and headers, and the labels a requestGenerator set', async () => {
  const server = await startServer({ port: 0, quiet: true, body: 'hello there' })
  const seen = []
  await loadTest({
    url: server.url,
    maxRequests: 4,
    concurrency: 1,
    statusCallback: (error, result) => seen.push(result),
    requestGenerator: (options, params, client, callback) => {
      const request = client(params, callback)
      request.labels = `label-${params.path}`
      request.end()
      return request
    },
  })
  await server.close()
  assert.equal(seen.length, 4)
  for (const r of seen) {
    assert.equal(r.statusCode, 200)
    assert.equal(r.body, 'hello there')
    assert.equal(r.headers['content-length'], '11')
    assert.equal(r.labels, 'label-/')
  }
})

test("loadtest's configuration file: .loadtestrc, or the file package.json's loadtest entry names", async () => {
  const fs = require('node:fs')
  const os = require('node:os')
  const path = require('node:path')
  // Not execFileSync: the server answers from this process's event loop.
  const execFile = require('node:util').promisify(require('node:child_process').execFile)
  const { url, seen, close } = await recordingServer()
  const cli = path.join(__dirname, '..', 'bin', 'pelt-loadtest.js')
  const rc = fs.mkdtempSync(path.join(os.tmpdir(), 'pelt-loadtestrc-'))
  fs.writeFileSync(path.join(rc, '.loadtestrc'), JSON.stringify({
    maxRequests: 3, concurrency: 1, method: 'POST', body: { hi: 'there' }, headers: { 'x-rc': 'yes' }, cookies: { a: '1' },
  }))
  await execFile(process.execPath, [cli, url, '--quiet'], { cwd: rc })
  // The command line wins over the file.
  await execFile(process.execPath, [cli, url, '-n', '1', '-m', 'PUT'], { cwd: rc })
  const named = fs.mkdtempSync(path.join(os.tmpdir(), 'pelt-loadtest-pkg-'))
  fs.writeFileSync(path.join(named, 'package.json'), JSON.stringify({ loadtest: 'load.json' }))
  fs.writeFileSync(path.join(named, 'load.json'), JSON.stringify({ maxRequests: 2, concurrency: 1 }))
  await execFile(process.execPath, [cli, url], { cwd: named })
  await close()
  fs.rmSync(rc, { recursive: true })
  fs.rmSync(named, { recursive: true })
  assert.equal(seen.length, 3 + 1 + 2)
  for (const r of seen.slice(0, 3)) {
    assert.equal(r.method, 'POST')
    assert.equal(r.body, '{"hi":"there"}')
    assert.equal(r.headers['x-rc'], 'yes')
    assert.equal(r.headers.cookie, 'a=1')
  }
  assert.equal(seen[3].method, 'PUT')
  assert.deepEqual(seen.slice(4).map(r => r.method), ['GET', 'GET'])
})

test('ws:// URLs: each request a message on a kept socket, echoed by startServer() as by loadtest\'s', async () => {
  const server = await startServer({ port: 0 })
  const result = await loadTest({ url: `ws://localhost:${server.port}/`, maxRequests: 200, concurrency: 4, quiet: true })
  assert.equal(result.totalRequests, 200)
  assert.equal(result.totalErrors, 0)
  const ws = result.pelt.websocket
  assert.equal(ws.upgrades, 4, 'one socket per client, kept')
  assert.equal(ws.messages_received, 200)
  assert.equal(ws.received_bytes, 200 * '{"some":"message"}'.length, "loadtest's message unless a body is given")
  await server.close()
})
