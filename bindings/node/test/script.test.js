'use strict'
// run({ script }): wrk's Lua scripts from Node.js — per-request hooks in each worker thread,
// done() after the run with every thread's values, and a failing init() rejecting the run.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { run, startServer } = require('../pelt')

function scriptFile(dir, name, text) {
  const p = path.join(dir, name)
  fs.writeFileSync(p, text)
  return p
}

test('run({ script }) calls request() per request and done() with every thread\'s counts', async () => {
  const server = await startServer()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pelt-node-script-'))
  try {
    const out = path.join(dir, 'done.txt')
    const script = scriptFile(dir, 'count.lua', `
local threads = {}
function setup(thread) table.insert(threads, thread) end
n = 0
function request()
  n = n + 1
  return wrk.format(nil, "/n/" .. n)
end
function done(summary, latency, requests)
  local made = 0
  for _, t in ipairs(threads) do made = made + t:get("n") end
  local f = io.open(arg_out, "w")
  f:write(string.format("%d %d", made, summary.requests))
  f:close()
end
arg_out = ${JSON.stringify(out)}
`)
    const result = await run({ url: server.url, script, requests: 300, connections: 3, threads: 3 })
    assert.strictEqual(result.requests.completed, 300)
    assert.strictEqual(fs.readFileSync(out, 'utf8'), '300 300')
  } finally {
    await server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('run({ script }) rejects with the script\'s line when its init() fails in the workers', async () => {
  const server = await startServer()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pelt-node-script-'))
  try {
    const script = scriptFile(dir, 'bad.lua',
      'function init(args)\n  error("no init")\nend\nfunction request() return wrk.format() end\n')
    await assert.rejects(run({ url: server.url, script, requests: 10 }),
      e => e instanceof RangeError && /bad\.lua:2: no init/.test(e.message))
  } finally {
    await server.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
