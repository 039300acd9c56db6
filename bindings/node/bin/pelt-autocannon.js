#!/usr/bin/env node
'use strict'
// pelt-autocannon: autocannon 9's command line on pelt's engine. Takes autocannon's flags
// (`pelt-autocannon -c 100 -d 20 URL`) and prints autocannon's tables (on standard error, as
// autocannon does), or with -j its result as one JSON line on standard output.

const fs = require('node:fs')
const { parseArgs } = require('node:util')
const autocannon = require('../autocannon.js')
const { version } = require('../package.json')

/** autocannon's flags: name, short key, whether it takes a value, repeatable, and help. */
const FLAGS = [
  ['connections', 'c', true, false, 'The number of concurrent connections to use. default: 10.'],
  ['pipelining', 'p', true, false, 'The number of pipelined requests to use. default: 1.'],
  ['duration', 'd', true, false, 'The number of seconds to run (or a timestring: 30s, 2m). default: 10.'],
  ['amount', 'a', true, false, 'The number of requests to make before exiting. If set, duration is ignored.'],
  ['sampleInt', 'L', true, false, 'Milliseconds between samples: pelt samples once a second (1000) only.'],
  ['socketPath', 'S', true, false, 'A Unix domain socket to connect to; the URL still gives Host and path.'],
  ['workers', 'w', true, false, 'Worker threads (pelt: engine threads) [default: the CPUs pelt may run on].'],
  ['warmup', 'W', true, false, 'Warm up first with the sub arguments, e.g. --warmup [ -c 1 -d 3 ].'],
  ['method', 'm', true, false, "The HTTP method to use. default: 'GET'."],
  ['timeout', 't', true, false, 'Seconds before a request times out. default: 10.'],
  ['title', 'T', true, false, 'The title to place in the results for identification.'],
  ['body', 'b', true, false, 'The body of the request.'],
  ['form', 'F', true, false, 'Upload a form (multipart/form-data): JSON, or a path to a JSON file.'],
  ['input', 'i', true, false, 'The body of the request, from a file.'],
  ['headers', 'H', true, true, 'A request header, K=V or K:V (repeatable).'],
  ['header', null, true, true, 'Same as --headers.'],
  ['har', null, true, false, "Send the HAR file's requests to the URL's origin."],
  ['bailout', 'B', true, false, 'Stop once this many errors happened (checked each second).'],
  ['maxConnectionRequests', 'M', true, false, 'At most this many requests per connection (pelt: times the connections, overall).'],
  ['maxOverallRequests', 'O', true, false, 'At most this many requests overall.'],
  ['connectionRate', 'r', true, false, 'Requests per second per connection (pelt: times the connections, overall).'],
  ['overallRate', 'R', true, false, "Requests per second overall: pelt's open loop, latency from each request's due time."],
  ['ignoreCoordinatedOmission', 'C', false, false, 'Not supported: pelt always measures from the due time.'],
  ['reconnectRate', 'D', true, false, 'Reconnect after this many requests: 1 only (a connection per request).'],
  ['no-progress', 'n', false, false, "Don't render the progress bar and the results table."],
  ['progress', null, false, false, 'Render the progress bar (default).'],
  ['latency', 'l', false, false, 'Print all the latency percentiles.'],
  ['idReplacement', 'I', false, false, 'Replace [<id>] in the body with a fresh UUID per request.'],
  ['json', 'j', false, false, 'Print the result as one line of JSON.'],
  ['forever', 'f', false, false, 'Run the benchmark again and again until Ctrl-C.'],
  ['servername', 's', true, false, 'The server name for SNI.'],
  ['excludeErrorStats', 'x', false, false, 'Not supported: pelt keeps one latency histogram for every status.'],
  ['expectBody', 'E', true, false, 'Count responses whose body is not this (sampled: every one up to 4096 per thread and second).'],
  ['renderStatusCodes', null, false, false, 'Print status codes and their counts.'],
  ['statusCodes', null, false, false, 'Same as --renderStatusCodes.'],
  ['cert', null, true, false, 'https: present this PEM client certificate chain.'],
  ['key', null, true, false, 'https: the PEM private key of --cert.'],
  ['ca', null, true, true, 'https: trust this PEM CA certificate (repeatable).'],
  ['debug', null, false, false, 'Print request errors to stderr (sampled ones).'],
  ['verbose', 'V', false, false, 'Print the table with results. default: true.'],
  ['on-port', null, false, false, 'Not supported: start the server first and give its URL.'],
  ['version', 'v', false, false, 'Print the version number.'],
  ['help', 'h', false, false, 'Print this menu.'],
]

function help(stream = process.stderr) {
  const lines = ['Usage: pelt-autocannon [opts] URL', '', "autocannon's command line on pelt's engine. URL is any HTTP or HTTPS URL; with the PORT", "environment variable set it can be a path (http://localhost:$PORT/path).", '', 'Available options:', '']
  for (const [name, key, value, , text] of FLAGS) {
    lines.push(`  ${key ? `-${key}/` : ''}--${name}${value ? ' ARG' : ''}`, `        ${text}`)
  }
  stream.write(lines.join('\n') + '\n')
}

/** The warm-up's sub arguments (`-W [ -c 1 -d 3 ]`), taken out of the argument list. */
function warmupOf(args) {
  const at = args.findIndex((a, i) => ['-W', '--warmup'].includes(a) && args[i + 1] === '[')
  if (at < 0) return { args }
  const end = args.indexOf(']', at)
  if (end < 0) throw new Error('--warmup [ ... ] is missing its ]')
  const sub = parseArgs({ args: args.slice(at + 2, end), options: { connections: { type: 'string', short: 'c' }, duration: { type: 'string', short: 'd' } } }).values
  const warmup = {}
  if (sub.connections !== undefined) warmup.connections = Number(sub.connections)
  if (sub.duration !== undefined) warmup.duration = /^[\d.]+$/.test(sub.duration) ? Number(sub.duration) : sub.duration
  return { args: [...args.slice(0, at), ...args.slice(end + 1)], warmup }
}

/** A number flag as autocannon's parser reads it (a plain number stays a number). */
const numeric = v => (v !== undefined && /^-?[\d.]+$/.test(v) ? Number(v) : v)

function main() {
  const options = {}
  for (const [name, key, value, multiple] of FLAGS) {
    options[name] = { type: value ? 'string' : 'boolean', multiple }
    if (key) options[name].short = key
  }
  let parsed
  let warmup
  try {
    const w = warmupOf(process.argv.slice(2))
    warmup = w.warmup
    parsed = parseArgs({ args: w.args, options, allowPositionals: true, strict: true })
  } catch (e) {
    console.error(e.message)
    help()
    process.exitCode = 1
    return
  }
  const v = parsed.values
  if (v.version) {
    console.log('pelt-autocannon', `v${version}`, '(autocannon 9 on pelt)')
    console.log('node', process.version)
    return
  }
  let urls = parsed.positionals
  if (v.help || urls.length === 0) {
    help()
    return
  }
  for (const [flag, name] of [['on-port', 'onPort'], ['ignoreCoordinatedOmission', 'ignoreCoordinatedOmission'], ['excludeErrorStats', 'excludeErrorStats']]) {
    if (v[flag]) {
      console.error(`pelt-autocannon: --${flag} is not supported: ${autocannon.REFUSED[name]}`)
      process.exitCode = 1
      return
    }
  }
  if (process.env.PORT) urls = urls.map(u => new URL(u, `http://localhost:${process.env.PORT}`).href)
  urls = urls.map(u => (u.startsWith('http') || u.startsWith('/') ? u : `http://${u}`))
  const opts = {
    url: urls.length > 1 ? urls : urls[0],
    warmup,
  }
  for (const name of ['connections', 'pipelining', 'duration', 'amount', 'sampleInt', 'workers', 'timeout', 'bailout', 'maxConnectionRequests', 'maxOverallRequests', 'connectionRate', 'overallRate', 'reconnectRate']) {
    if (v[name] !== undefined) opts[name] = numeric(v[name])
  }
  for (const name of ['socketPath', 'method', 'title', 'body', 'form', 'servername', 'idReplacement', 'json', 'forever', 'debug', 'expectBody']) {
    if (v[name] !== undefined) opts[name] = v[name]
  }
  try {
    if (v.input) opts.body = fs.readFileSync(v.input, 'utf8')
    const headers = [...(v.headers || []), ...(v.header || [])]
    if (headers.length) {
      opts.headers = {}
      for (const h of headers) {
        const ends = [h.indexOf(':'), h.indexOf('=')].filter(i => i > 0)
        if (ends.length === 0) throw new Error(`An HTTP header was not correctly formatted: ${h}`)
        const at = Math.min(...ends)
        opts.headers[h.slice(0, at)] = h.slice(at + 1)
      }
    }
    if (v.har) opts.har = JSON.parse(fs.readFileSync(v.har, 'utf8'))
    const tls = {}
    if (v.cert) tls.cert = fs.readFileSync(v.cert)
    if (v.key) tls.key = fs.readFileSync(v.key)
    if (v.ca) tls.ca = v.ca.map(f => fs.readFileSync(f))
    if (Object.keys(tls).length) opts.tlsOptions = tls
  } catch (e) {
    console.error(e.message)
    process.exitCode = 1
    return
  }
  opts.renderLatencyTable = Boolean(v.latency)
  opts.renderStatusCodes = Boolean(v.renderStatusCodes || v.statusCodes)
  opts.renderProgressBar = !v['no-progress']
  opts.renderResultsTable = !v['no-progress']
  if (v['no-progress']) opts.renderStatusCodes = false
  // As autocannon's command line: the instance tracks itself (tables on standard error).
  opts[Symbol.for('internal')] = true
  let instance
  try {
    instance = autocannon(opts)
  } catch (e) {
    console.error(e.message)
    process.exitCode = 1
    return
  }
  if (v.debug) instance.on('reqError', e => console.error(e))
  if (instance.catch) {
    instance.catch(e => {
      console.error(e.message)
      process.exitCode = 1
    })
  } else {
    instance.on('error', e => {
      console.error(e.message)
      process.exitCode = 1
    })
  }
  process.once('SIGINT', () => instance.stop())
}

main()
