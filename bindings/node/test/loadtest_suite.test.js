'use strict'
// loadtest's own tests, run on pelt/loadtest with only the import changed, and on loadtest
// itself as the control (loadtest@8.2.1 is a pinned dev dependency: its npm package ships its
// test/ and sample/ folders; nothing of it is copied into this repository).
//
// Each public-API test file (the ones that import loadTest or startServer, not loadtest's
// internals) is copied twice under node_modules/.loadtest-suite/, with its imports of
// loadtest ('../index.js', '../lib/loadtest.js', '../lib/testserver.js') pointed at loadtest's
// index.js in one copy and at pelt's loadtest.mjs in the other, and `node bin/loadtest.js`
// at the matching command line (pelt-loadtest). runner.mjs runs each test function alone, in
// a process of its own.
// Every test that passes on loadtest must pass on pelt, except the gaps listed below, each
// with its reason; a gap that starts passing fails this test until it leaves the list.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFile, execFileSync } = require('node:child_process')
const { pathToFileURL } = require('node:url')
const { compareOutcomes } = require('./helpers.js')

const ROOT = path.join(__dirname, '..')
const LOADTEST = path.dirname(require.resolve('loadtest/package.json'))
const WORK = path.join(ROOT, 'node_modules', '.loadtest-suite')

/** The test files that use loadtest's public API. */
const FILES = ['testserver.js', 'loadtest.js', 'integration.js', 'request-generator.js', 'body-generator.js']

/** What pelt does not do yet, by test: file and function, and why. */
const GAPS = {}

const TARGETS = {
  loadtest: {
    library: path.join(LOADTEST, 'index.js'),
    cli: path.join(LOADTEST, 'bin', 'loadtest.js'),
  },
  pelt: {
    library: path.join(ROOT, 'loadtest.mjs'),
    cli: path.join(ROOT, 'bin', 'pelt-loadtest.js'),
  },
}

/** A copy of loadtest's package folders for `target`, with the test files rewritten. */
function prepare(name, target) {
  const dir = path.join(WORK, name)
  const tests = []
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  for (const folder of ['test', 'sample']) {
    fs.cpSync(path.join(LOADTEST, folder), path.join(dir, folder), { recursive: true })
  }
  // The copies are ES modules, as in loadtest's package.
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}\n')
  const library = JSON.stringify(pathToFileURL(target.library).href)
  for (const file of FILES) {
    const p = path.join(dir, 'test', file)
    let text = fs.readFileSync(p, 'utf8')
    text = text.replace(/from '\.\.\/(index|lib\/loadtest|lib\/testserver)\.js'/g, `from ${library}`)
    text = text.replace("join('./', 'bin', 'loadtest.js')", JSON.stringify(target.cli))
    const list = text.match(/testing\.run\(\[([^\]]*)\]/)
    assert.ok(list, `${file}: no testing.run([...]) list`)
    const names = list[1].split(',').map(s => s.trim()).filter(Boolean)
    text += `\nexport { ${names.join(', ')} }\n`
    fs.writeFileSync(p, text)
    tests.push(...names.map(name => [file, name]))
  }
  return { dir, tests }
}

/** Runs every test of every file on `name`; returns {"file function": {ok, message}}. */
function runAll(name) {
  const { dir, tests } = prepare(name, TARGETS[name])
  const results = {}
  for (const [file, test] of tests) {
    const runner = path.join(__dirname, 'loadtest-suite', 'runner.mjs')
    let out = ''
    try {
      out = execFileSync(process.execPath, [runner, path.join(dir, 'test', file), test], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
        stdio: ['ignore', 'pipe', 'ignore'],
      })
    } catch (e) {
      out = e.stdout || ''
    }
    const line = out.split('\n').find(l => l.startsWith('{'))
    results[`${file} ${test}`] = line ? JSON.parse(line) : { ok: false, message: 'the runner gave no outcome' }
  }
  return results
}

test("loadtest's own public-API tests pass on pelt/loadtest wherever they pass on loadtest", { timeout: 600_000 }, () => {
  const control = runAll('loadtest')
  const pelt = runAll('pelt')
  assert.ok(Object.keys(control).length >= 20, 'the suite ran')
  const problems = compareOutcomes('loadtest', control, pelt, GAPS)
  assert.deepEqual(problems, [])
})

/**
 * The programs among the code examples of loadtest's documentation (its README.md and doc/,
 * the blocks that import loadtest) and sample/request-generator.js, each written to a file
 * with the import pointed at `library`, the example's server (localhost:8000, yourHost,
 * www.example.com) at `url` and its own server's port 8000 at `port`. The other blocks are
 * fragments (an options object, one function), not programs.
 */
function examples(library, url, port) {
  const programs = []
  for (const doc of ['README.md', 'doc/api.md', 'doc/status-callback.md', 'doc/tcp-sockets.md']) {
    const text = fs.readFileSync(path.join(LOADTEST, doc), 'utf8')
    const blocks = [...text.matchAll(/```(?:javascript|js)\n([\s\S]*?)```/g)].map(m => m[1])
    blocks.forEach((code, k) => {
      if (code.includes("from 'loadtest'")) programs.push([`${doc} #${k + 1}`, code])
    })
  }
  const sample = fs.readFileSync(path.join(LOADTEST, 'sample', 'request-generator.js'), 'utf8')
  programs.push(['sample/request-generator.js', sample])
  return programs.map(([name, code]) => [name, code
    .replace(/from '(loadtest|\.\.\/index\.js)'/g, `from ${JSON.stringify(pathToFileURL(library).href)}`)
    .replace(/(https?:\/\/(localhost:8000|yourHost|www\.example\.com))\/?/g, url)
    .replace(/port: 8000/g, `port: ${port}`)])
}

/** Runs each example program on `name`; returns {example: {ok, message}}. */
async function runExamples(name, url, port) {
  const dir = path.join(WORK, `${name}-examples`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  const results = {}
  for (const [example, code] of examples(TARGETS[name].library, url, port)) {
    const file = path.join(dir, `${example.replace(/[^\w]+/g, '_')}.mjs`)
    fs.writeFileSync(file, code)
    const outcome = await new Promise(resolve => {
      execFile(process.execPath, [file], { cwd: dir, timeout: 90_000 }, (error, stdout, stderr) => {
        const failed = error || /Got an error/.test(stderr + stdout)
        resolve({ ok: !failed, message: failed ? `${error ? error.message : ''}${stderr}`.slice(0, 2000) : '' })
      })
    })
    results[example] = outcome
  }
  return results
}

test("loadtest's documentation examples run on pelt/loadtest wherever they run on loadtest", { timeout: 600_000 }, async () => {
  const { recordingServer, freePort } = require('./helpers.js')
  const server = await recordingServer()
  try {
    const control = await runExamples('loadtest', server.url, await freePort())
    const pelt = await runExamples('pelt', server.url, await freePort())
    assert.ok(Object.keys(control).length >= 7, 'the examples were found')
    assert.deepEqual(compareOutcomes('loadtest', control, pelt, {}), [])
  } finally {
    await server.close()
  }
})
