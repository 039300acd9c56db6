#!/usr/bin/env node
'use strict'
// pelt-loadtest: loadtest 8's command line on pelt's engine. Takes loadtest's flags
// (`pelt-loadtest -n 1000 -c 10 -k --rps 200 URL`) and prints loadtest's report. --cores N
// runs pelt with N threads (loadtest forks N processes and adds up their results); --tcp is
// accepted and changes nothing (pelt always writes to raw sockets).

const { parseArgs } = require('node:util')
const { loadTest } = require('../loadtest.js')
const { version } = require('../package.json')

/** loadtest's flags: name, short key, whether it takes a value, repeatable, and help. */
const FLAGS = [
  ['maxSeconds', 't', true, false, 'Max time in seconds to wait for responses, default 10'],
  ['maxRequests', 'n', true, false, 'Number of requests to perform'],
  ['concurrency', 'c', true, false, 'Number of concurrent requests, default 10'],
  ['timeout', 'd', true, false, 'Timeout for each request in milliseconds'],
  ['contentType', 'T', true, false, 'MIME type for the body'],
  ['cookies', 'C', true, true, 'Send a cookie as name=value'],
  ['headers', 'H', true, true, 'Send a header as header:value'],
  ['postBody', 'P', true, false, 'Send string as POST body'],
  ['postFile', 'p', true, false, 'Send the contents of the file as POST body'],
  ['patchBody', 'A', true, false, 'Send string as PATCH body'],
  ['patchFile', 'a', true, false, 'Send the contents of the file as PATCH body'],
  ['data', null, true, false, 'Send data POST body'],
  ['method', 'm', true, false, 'method to url'],
  ['putFile', 'u', true, false, 'Send the contents of the file as PUT body'],
  ['requestGenerator', 'R', true, false, 'JS module with a custom request generator function'],
  ['recover', 'r', false, false, 'Do not exit on socket receive errors (default)'],
  ['secureProtocol', 's', true, false, 'TLS/SSL secure protocol method to use (not supported by pelt)'],
  ['keepalive', 'k', false, false, 'Use a keep-alive http agent'],
  ['version', 'V', false, false, 'Show version number and exit'],
  ['proxy', null, true, false, 'Use a proxy for requests (not supported by pelt)'],
  ['rps', null, true, false, 'Specify the requests per second'],
  ['index', null, true, false, 'Replace the value of given arg with an index in the URL'],
  ['insecure', null, false, false, 'Allow self-signed certificates over https'],
  ['key', null, true, false, 'The client key to use'],
  ['cert', null, true, false, 'The client certificate to use'],
  ['quiet', null, false, false, 'Do not log any messages'],
  ['cores', null, true, false, 'Number of cores to use (pelt: threads), default 1'],
  ['tcp', null, false, false, 'Use TCP sockets (pelt always does; accepted, changes nothing)'],
  ['agent', null, false, false, 'Use a keep-alive http agent (deprecated)'],
  ['debug', null, false, false, 'Show debug messages (deprecated)'],
]

function help(stream = process.stderr) {
  const lines = ['Usage: pelt-loadtest [options] URL', '', "loadtest's command line on pelt's engine.", '']
  for (const [name, key, value, , text] of FLAGS) {
    const flag = `${key ? `-${key}, ` : '    '}--${name}${value ? ' ARG' : ''}`
    lines.push(`  ${flag.padEnd(28)} ${text}`)
  }
  stream.write(lines.join('\n') + '\n')
}

async function main() {
  const options = {}
  for (const [name, key, value, multiple] of FLAGS) {
    options[name] = { type: value ? 'string' : 'boolean', multiple }
    if (key) options[name].short = key
  }
  options.help = { type: 'boolean', short: 'h' }
  let parsed
  try {
    parsed = parseArgs({ options, allowPositionals: true })
  } catch (e) {
    console.error(e.message)
    help()
    return 1
  }
  const { values, positionals } = parsed
  if (values.help) {
    help(process.stdout)
    return 0
  }
  if (values.version) {
    console.log('Loadtest version: %s (pelt %s)', '8.2.1', version)
    return 0
  }
  if (positionals.length !== 1) {
    console.error(positionals.length ? `Too many arguments: ${positionals}` : 'Missing URL to load-test')
    help()
    return 1
  }
  const o = { url: positionals[0] }
  const numbers = new Set(['maxSeconds', 'maxRequests', 'concurrency', 'timeout', 'cores'])
  for (const [name, value] of Object.entries(values)) {
    if (['version', 'help', 'debug', 'recover', 'tcp'].includes(name)) continue
    if (numbers.has(name)) {
      const n = Number(value)
      if (!Number.isFinite(n) || n < 0) {
        console.error(`Invalid --${name}: ${value}`)
        return 1
      }
      o[name] = n
    } else {
      o[name] = value
    }
  }
  if (o.cookies) o.cookies = o.cookies.flatMap(c => c.split(';').map(s => s.trim()).filter(Boolean))
  try {
    const result = await loadTest(o)
    result.show()
    return 0
  } catch (e) {
    console.error(e.message)
    return 1
  }
}

main().then(code => { process.exitCode = code })
