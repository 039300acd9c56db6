'use strict'
// autocannon's own README examples and sample programs, run on pelt/autocannon with only the
// import changed, and on autocannon itself as the control (autocannon@9.0.0 is a pinned dev
// dependency: its npm package ships its README and samples/; nothing of it is copied into
// this repository).
//
// The README's JavaScript blocks that require('autocannon') are written to files with the
// require pointed at one library or the other and http://localhost:3000 at a server of this
// test; the samples (each starts its own server) are copied with `require('../autocannon')`
// redirected. A program passes when it exits 0, or, for a sample (whose server keeps it
// alive), when it prints `finished bench null` (its callback with no error); and when it
// writes no error on its standard error.
// Every program that passes on autocannon must pass on pelt, except the gaps listed below,
// each with its reason; a gap that starts passing fails this test until it leaves the list.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { recordingServer, compareOutcomes } = require('./helpers.js')

const ROOT = path.join(__dirname, '..')
const AUTOCANNON = path.dirname(require.resolve('autocannon/package.json'))
const WORK = path.join(ROOT, 'node_modules', '.autocannon-suite')

/** What pelt does not do yet, by program, and why. */
const GAPS = {
  'samples/request-context.js': "onResponse carries each response into the next request's context: refused with a TypeError until pelt's scenarios can capture",
  'samples/request-context-workers.js': "onResponse carries each response into the next request's context: refused with a TypeError until pelt's scenarios can capture",
}

const LIBRARIES = {
  autocannon: path.join(AUTOCANNON, 'autocannon.js'),
  pelt: path.join(ROOT, 'autocannon.js'),
}

/** The programs for `name`: [label, file], written under WORK/name. */
function programs(name, url) {
  const dir = path.join(WORK, name)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(path.join(dir, 'samples'), { recursive: true })
  const library = JSON.stringify(LIBRARIES[name])
  const out = []
  const readme = fs.readFileSync(path.join(AUTOCANNON, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map(m => m[1])
  blocks.forEach((code, k) => {
    if (!/require\(["']autocannon["']\)/.test(code)) return
    const file = path.join(dir, `readme-${k + 1}.js`)
    fs.writeFileSync(file, code
      .replace(/require\(["']autocannon["']\)/g, `require(${library})`)
      .replace(/http:\/\/localhost:3000\/?/g, url))
    out.push([`README.md #${k + 1}`, file])
  })
  fs.cpSync(path.join(AUTOCANNON, 'samples', 'helpers'), path.join(dir, 'samples', 'helpers'), { recursive: true })
  for (const sample of fs.readdirSync(path.join(AUTOCANNON, 'samples')).filter(f => f.endsWith('.js')).sort()) {
    const file = path.join(dir, 'samples', sample)
    const code = fs.readFileSync(path.join(AUTOCANNON, 'samples', sample), 'utf8')
    fs.writeFileSync(file, code.replace(/require\('\.\.\/autocannon'\)/g, `require(${library})`))
    out.push([`samples/${sample}`, file])
  }
  return out
}

/** Runs one program; resolves to {ok, message}. Keeps only the tail of what it prints. */
function runProgram(file, limitMs) {
  return new Promise(resolve => {
    const child = spawn(process.execPath, [file], { cwd: path.dirname(file), stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    let outcome = null
    const finish = (ok, message) => {
      if (outcome) return
      outcome = { ok, message }
      clearTimeout(timer)
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    const timer = setTimeout(() => finish(false, `no outcome within ${limitMs} ms`), limitMs)
    child.stdout.on('data', d => {
      out = (out + d).slice(-20000)
      const m = out.match(/finished bench (\S+)/)
      if (m) finish(m[1] === 'null' && !/Error/.test(err), m[1] === 'null' ? err.slice(0, 2000) : out.slice(out.indexOf(m[0]), out.indexOf(m[0]) + 500))
    })
    child.stderr.on('data', d => { err = (err + d).slice(-20000) })
    child.on('close', code => {
      // An error written on standard error fails the program (a warning does not).
      const failed = code !== 0 || /\bError\b/.test(err)
      finish(!failed, failed ? `exit ${code}: ${err.slice(-2000)}` : '')
      resolve(outcome)
    })
  })
}

/** Runs every program on `name`, `parallel` at a time; returns {label: {ok, message}}. */
async function runAll(name, url, parallel = 4) {
  const list = programs(name, url)
  const results = {}
  let next = 0
  const worker = async () => {
    while (next < list.length) {
      const [label, file] = list[next++]
      results[label] = await runProgram(file, 90_000)
    }
  }
  await Promise.all(Array.from({ length: parallel }, worker))
  return results
}

test("autocannon's README examples and samples run on pelt/autocannon wherever they run on autocannon", { timeout: 900_000 }, async () => {
  const server = await recordingServer()
  try {
    const control = await runAll('autocannon', server.url)
    const pelt = await runAll('pelt', server.url)
    const labels = Object.keys(control)
    assert.ok(labels.filter(l => l.startsWith('README')).length >= 4, 'the README examples were found')
    assert.ok(labels.length >= 14, 'the samples were found')
    const problems = compareOutcomes('autocannon', control, pelt, GAPS)
    assert.deepEqual(problems, [])
  } finally {
    await server.close()
  }
})
