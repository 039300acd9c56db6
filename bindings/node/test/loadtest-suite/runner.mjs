// Runs one test function of one of loadtest's own test files and prints one JSON line:
// {name, ok, message}. Each test runs in a process of its own, so a server a failed test left
// open does not hold its port for the next. The file is a copy whose imports of loadtest were
// redirected (see ../loadtest_suite.test.js) and which exports its test functions.
//
// loadtest's tests use the `testing` package's conventions: a test takes a callback and calls
// it with an error (anything truthy) or none, or returns a promise. The first outcome counts
// (some tests call back twice); a test that neither calls back nor settles within the time
// limit fails.
//
// Usage: node runner.mjs FILE NAME [LIMIT_MS]

import { pathToFileURL } from 'node:url'

const [file, name, limit = '15000'] = process.argv.slice(2)
const module = await import(pathToFileURL(file).href)

function runOne(f) {
  return new Promise(resolve => {
    let done = false
    const finish = (ok, message) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve({ ok, message })
    }
    const timer = setTimeout(() => finish(false, `no outcome within ${limit} ms`), Number(limit))
    const callback = (error, result) => {
      if (error) finish(false, String(error && error.stack ? error.stack : error))
      else finish(true, typeof result === 'string' ? result.slice(0, 200) : '')
    }
    try {
      const returned = f(callback)
      if (returned && typeof returned.then === 'function') {
        returned.then(() => finish(true, ''), e => finish(false, String(e && e.stack ? e.stack : e)))
      } else if (f.length === 0) {
        finish(true, '')
      }
    } catch (e) {
      finish(false, String(e && e.stack ? e.stack : e))
    }
  })
}

const { ok, message } = await runOne(module[name])
process.stdout.write(JSON.stringify({ name, ok, message: message.slice(0, 2000) }) + '\n')
process.exit(0)
