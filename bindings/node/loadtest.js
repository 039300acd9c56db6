'use strict'
// loadtest 8's API on pelt: `const {loadTest, startServer} = require('pelt/loadtest')`.
// loadTest() is pelt.js's; startServer() takes loadtest's server options (port, delay in
// milliseconds, error, percent) and starts pelt's built-in server with them.

const pelt = require('./pelt.js')

/** loadtest's default port for its test server. */
const DEFAULT_PORT = 7357

/**
 * loadtest's startServer({port, delay, error, percent}): `delay` in milliseconds, `error` the
 * status to answer (500 when only `percent` is given), `percent` the share of answers that
 * get it (all of them without). Resolves to {url, port, served, close()}; with a callback,
 * loadtest's legacy form: returns the server at once and calls back when it listens.
 */
function startServer(options = {}, callback) {
  if (typeof callback !== 'function') return (async () => pelt.serverNow(serveOptions(options)))()
  // loadtest's legacy form: the server at once, the callback when it listens (or failed).
  try {
    const server = pelt.serverNow(serveOptions(options))
    setImmediate(() => callback(null))
    return server
  } catch (e) {
    setImmediate(() => callback(e))
    return undefined
  }
}

/** loadtest's server options as `pelt serve`'s. */
function serveOptions(options) {
  const known = new Set(['port', 'delay', 'error', 'percent', 'quiet'])
  for (const name of Object.keys(options)) {
    if (!known.has(name)) throw new TypeError(`unknown option '${name}'`)
  }
  const serve = { port: options.port === undefined ? DEFAULT_PORT : options.port }
  if (options.delay) serve.delay = `${options.delay}ms`
  if (options.error !== undefined || options.percent !== undefined) {
    const share = options.percent === undefined ? 1 : options.percent / 100
    if (options.error === undefined || options.error === 500) {
      serve.errorRate = share
    } else if (share === 1) {
      serve.status = options.error
    } else {
      throw new RangeError("pelt's server answers a share of requests with 500 only: give error 500 with percent, or error alone")
    }
  }
  return serve
}

module.exports = { loadTest: pelt.loadTest, startServer, LoadtestResult: pelt.LoadtestResult }
