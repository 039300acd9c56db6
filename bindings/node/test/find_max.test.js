'use strict'
// findMax(): pelt find-max from Node.js, against startServer() with a known capacity.

const test = require('node:test')
const assert = require('node:assert')
const { findMax, startServer } = require('../pelt')

test('findMax() finds a rate at or below a server of known capacity, step by step', async () => {
  // One thread held 2 ms per request: about 500 requests/s at most.
  const server = await startServer({ threads: 1, work: '2ms' })
  try {
    const search = findMax({
      url: server.url, slo: 'p99<250ms', duration: '500ms', warmup: '200ms', connections: 8,
      maxSteps: 4, precision: '20%',
    })
    const seen = []
    search.on('step', s => seen.push(s))
    const doc = await search
    assert.deepStrictEqual(doc.slo, ['p99<250ms'])
    assert.strictEqual(doc.steps[0].phase, 'probe')
    assert.ok(doc.steps.length >= 2 && doc.steps.length <= 5, JSON.stringify(doc.steps))
    assert.deepStrictEqual(seen.map(s => s.step), doc.steps.map(s => s.step))
    for (const s of doc.steps.slice(1)) {
      assert.ok(s.rate > 0 && typeof s.passed === 'boolean' && Array.isArray(s.thresholds))
    }
    if (doc.answer) {
      // A rate that held was completed at 95 % or more: no server serves more than it can.
      assert.ok(doc.answer.achieved_rps <= 600, JSON.stringify(doc.answer))
      assert.ok(doc.steps.find(s => s.step === doc.answer.step).passed)
    }
  } finally {
    await server.close()
  }
})

test('findMax() refuses bad options with the CLI\'s line, before any traffic', async () => {
  const server = await startServer()
  try {
    const url = server.url
    assert.throws(() => findMax({ url }),
      { name: 'RangeError', message: 'the following required arguments were not provided: --slo <EXPR>' })
    assert.throws(() => findMax({ url, slo: 'p99<1s', rate: 10 }), /sets the rate itself/)
    assert.throws(() => findMax({ url, slo: 'p99<1s', precision: '0.01%' }),
      /invalid value '0.01%' for '--precision <SHARE>': must be at least 0.1%/)
    assert.throws(() => findMax({ url, slo: 'p99<1s', maxSteps: true }), TypeError)
    assert.strictEqual(server.served, 0)
  } finally {
    await server.close()
  }
})
