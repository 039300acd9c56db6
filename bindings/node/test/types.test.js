'use strict'
// pelt.d.ts says what pelt.js does: every option it declares is one pelt takes, every option
// pelt takes is declared, and every event pelt.js emits has a typed listener.

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const path = require('node:path')
const { check, startServer } = require('../pelt')

const dts = fs.readFileSync(path.join(__dirname, '..', 'pelt.d.ts'), 'utf8')
const js = fs.readFileSync(path.join(__dirname, '..', 'pelt.js'), 'utf8')

/** The names an interface of pelt.d.ts (or `text`) declares. */
function declared(name, text = dts) {
  const start = text.indexOf(`export interface ${name} {`)
  assert.ok(start >= 0, `pelt.d.ts declares ${name}`)
  const body = text.slice(start, text.indexOf('\n}\n', start))
  return [...body.matchAll(/^ {2}(\w+)\??:/gm)].map(m => m[1])
}

test('every declared run option is one pelt takes, and no other name is', () => {
  const names = declared('RunOptions')
  assert.ok(names.length >= 40, names.join(' '))
  for (const name of names) {
    // A value of the wrong type names the option (a TypeError), never "unknown option".
    assert.throws(() => check({ url: 'http://127.0.0.1:1/', [name]: [{ no: 1 }] }),
      e => !/unknown option/.test(e.message), name)
  }
  assert.throws(() => check({ url: 'http://127.0.0.1:1/', notAnOption: 1 }), /unknown option 'notAnOption'/)
})

test('every declared server option is one startServer takes', async () => {
  const names = declared('ServerOptions')
  assert.ok(names.includes('maxStreams') && names.includes('stall') && names.includes('cert'), names.join(' '))
  for (const name of names) {
    await assert.rejects(startServer({ [name]: [{ no: 1 }] }), e => !/unknown option/.test(e.message), name)
  }
})

test('every declared findMax option is one findMax takes', () => {
  const { findMax } = require('../pelt')
  const names = declared('FindMaxSettings')
  assert.deepStrictEqual(names, ['slo', 'start', 'maxRate', 'precision', 'maxSteps'])
  for (const name of names) {
    assert.throws(() => findMax({ url: 'http://127.0.0.1:1/', slo: 'p99<1s', [name]: [{ no: 1 }] }),
      e => !/unknown option/.test(e.message), name)
  }
})

test('every declared compare option is one compare takes', () => {
  const { compare } = require('../pelt')
  const names = declared('CompareSettings')
  assert.deepStrictEqual(names, ['target', 'vary', 'repeat'])
  for (const name of names) {
    assert.throws(() => compare({ target: ['http://127.0.0.1:1/'], [name]: [{ no: 1 }] }),
      e => !/unknown option/.test(e.message), name)
  }
})

test('every event pelt.js emits has a typed listener', () => {
  const emitted = new Set([...js.matchAll(/this\.emit\('(\w+)'/g)].map(m => m[1]))
  assert.ok(emitted.has('tick') && emitted.has('samples'), [...emitted].join(' '))
  for (const event of emitted) {
    assert.ok(dts.includes(`on(event: '${event}'`), `pelt.d.ts types the '${event}' event`)
  }
})

test("pelt/loadtest's types declare the options its code reads, and no others", () => {
  const { LOADTEST_OPTIONS, SERVER_OPTIONS } = require('../loadtest.js')
  assert.deepStrictEqual(declared('LoadtestOptions').sort(), [...LOADTEST_OPTIONS].sort())
  const loadtestDts = fs.readFileSync(path.join(__dirname, '..', 'loadtest.d.ts'), 'utf8')
  assert.deepStrictEqual(declared('LoadtestServerOptions', loadtestDts).sort(), [...SERVER_OPTIONS].sort())
})

test("pelt/autocannon's types declare the options its code reads, and no others", () => {
  const { AUTOCANNON_OPTIONS } = require('../autocannon.js')
  const text = fs.readFileSync(path.join(__dirname, '..', 'autocannon.d.ts'), 'utf8')
  const start = text.indexOf('  interface AutocannonOptions {')
  assert.ok(start >= 0, 'autocannon.d.ts declares AutocannonOptions')
  const body = text.slice(start, text.indexOf('\n  }\n', start))
  const names = [...body.matchAll(/^ {4}(\w+)\??:/gm)].map(m => m[1])
  assert.deepStrictEqual(names.sort(), [...AUTOCANNON_OPTIONS].sort())
})
