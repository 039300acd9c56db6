'use strict'
// run() on a grpc:// URL, against a gRPC server pelt did not write: Python's grpcio
// (tests/interop/grpc_app.py, from the virtual environment .ci/run makes), with its own count
// of the calls it ended by status. The options are the command line's (proto, reflect, streams).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const http = require('node:http')
const { spawn } = require('node:child_process')
const pelt = require('..')

const ROOT = path.join(__dirname, '..', '..', '..')
const PYTHON = path.join(ROOT, 'tests', 'interop', '.venv', 'bin', 'python')
const PROTO = path.join(ROOT, 'tests', 'interop', 'greeter.proto')

/** GET url as JSON. */
function getJson (url) {
  return new Promise((resolve, reject) => {
    http.get(url, res => {
      let body = ''
      res.on('data', d => { body += d })
      res.on('end', () => resolve(JSON.parse(body)))
    }).on('error', reject)
  })
}

/** Starts grpc_app.py: its process, its gRPC port and a function for its counts. */
async function grpcApp () {
  const child = spawn(PYTHON, [path.join(ROOT, 'tests', 'interop', 'grpc_app.py')], { stdio: ['ignore', 'pipe', 'inherit'] })
  const line = await new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', d => {
      out += d
      if (out.includes('\n')) resolve(out.split('\n')[0])
    })
    child.on('exit', code => reject(new Error(`grpc_app.py exited ${code}`)))
  })
  const countsUrl = `http://127.0.0.1:${line.replace('listening on ', '')}/count`
  const first = await getJson(countsUrl)
  return { child, port: first.grpc_port, counts: () => getJson(countsUrl) }
}

test('grpc:// calls from run(): counted by gRPC status, as the server counted them', async t => {
  if (!fs.existsSync(PYTHON)) {
    assert.ok(!process.env.CI, 'tests/interop/.venv is missing; .ci/run makes it')
    return t.skip('tests/interop/.venv is missing')
  }
  const app = await grpcApp()
  try {
    const url = `grpc://127.0.0.1:${app.port}/pelt.test.Greeter/SayHello`
    const r = await pelt.run({ url, proto: PROTO, body: '{"name": "flaky"}', requests: 30, connections: 2, streams: 3 })
    assert.equal(r.grpc.calls, 30)
    assert.deepEqual(r.grpc.status, { OK: 20, UNAVAILABLE: 10 })
    assert.equal(r.grpc.messages.UNAVAILABLE, 'backend down: flaky')
    assert.equal(r.streams, 3)
    // The descriptors from the server's reflection service instead of a .proto.
    const reflected = await pelt.run({ url, reflect: true, body: '{"name": "x"}', requests: 5 })
    assert.deepEqual(reflected.grpc.status, { OK: 5 })
    const counts = await app.counts()
    assert.equal(counts.calls['SayHello OK'], 25)
    assert.equal(counts.calls['SayHello UNAVAILABLE'], 10)
    // Bad input throws before any call.
    assert.throws(() => pelt.run({ url, proto: PROTO, body: '{"nom": 1}', requests: 1 }), /unrecognized field name 'nom'/)
  } finally {
    app.child.kill()
  }
})
