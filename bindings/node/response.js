'use strict'
// What loadtest.js and autocannon.js read of a sampled response (run() option
// sampleResponses): the engine hands over the bytes as they came; they are parsed here, once
// a second, never on the engine's path.

/** A sampled response as it came (HTTP/1.1 text, `sampleResponses`) as Node's http has it:
 * its headers (names lower-cased) and its body (chunked framing removed). */
function parseResponse(text) {
  const end = text.indexOf('\r\n\r\n')
  const head = end < 0 ? text : text.slice(0, end)
  let body = end < 0 ? '' : text.slice(end + 4)
  const headers = {}
  for (const line of head.split('\r\n').slice(1)) {
    const at = line.indexOf(':')
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim()
  }
  if (/chunked/i.test(headers['transfer-encoding'] || '')) {
    let rest = body
    body = ''
    for (;;) {
      const line = rest.indexOf('\r\n')
      const size = parseInt(rest.slice(0, line), 16)
      if (line < 0 || !(size > 0)) break
      body += rest.slice(line + 2, line + 2 + size)
      rest = rest.slice(line + 2 + size + 2)
    }
  }
  return { body, headers }
}

module.exports = { parseResponse }
