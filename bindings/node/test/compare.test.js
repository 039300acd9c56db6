'use strict'
// compare(): pelt compare from Node.js, against two built-in servers.

const test = require('node:test')
const assert = require('node:assert')
const { compare, startServer } = require('../pelt')

test('compare() runs every target x setting, interleaved, and gives one row of medians each', async () => {
  const fast = await startServer()
  const slow = await startServer({ delay: '2ms' })
  try {
    const cmp = compare({
      target: { fast: fast.url, slow: slow.url },
      vary: { connections: [1, 4] },
      repeat: 2,
      requests: 200,
    })
    const seen = []
    cmp.on('run', r => seen.push(r))
    const doc = await cmp
    assert.strictEqual(doc.runs, 8)
    assert.deepStrictEqual(doc.targets.map(t => t.name), ['fast', 'slow'])
    assert.deepStrictEqual(doc.vary, [{ key: 'connections', values: ['1', '4'] }])
    assert.deepStrictEqual(doc.rows.map(r => `${r.target} ${r.settings.connections}`),
      ['fast 1', 'slow 1', 'fast 4', 'slow 4'])
    for (const row of doc.rows) {
      assert.strictEqual(row.runs.length, 2)
      assert.ok(row.runs.every(r => r.completed === 200 && r.errors === 0), JSON.stringify(row))
    }
    assert.deepStrictEqual(seen.map(r => r.done), [1, 2, 3, 4, 5, 6, 7, 8])
    assert.strictEqual(seen[0].cell, 'fast connections=1')
    // Every request the rows count reached its server.
    assert.strictEqual(fast.served, 800)
    assert.strictEqual(slow.served, 800)
  } finally {
    await fast.close()
    await slow.close()
  }
})

test('compare() refuses a bad cell or option with the CLI\'s line, before any traffic', async () => {
  const server = await startServer()
  try {
    const target = { s: server.url }
    assert.throws(() => compare({ target, vary: ['pipeline=2'], keepAlive: false }),
      { name: 'RangeError', message: "target s with pipeline=2: the argument '--pipeline <D>' cannot be used with '--no-keepalive'" })
    assert.throws(() => compare({ target, vary: { nosuch: [1] } }), /cannot --vary nosuch: not a load flag/)
    assert.throws(() => compare({ url: server.url, target }), /not as a plain URL/)
    assert.throws(() => compare({}), /no targets/)
    assert.throws(() => compare({ target, repeat: true }), TypeError)
    assert.strictEqual(server.served, 0)
  } finally {
    await server.close()
  }
})
