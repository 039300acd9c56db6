'use strict'
// One load through one Node.js API, for bench/node_api.py: prints {"requests": N, "seconds": S}.
//   node drive.js MODE URL REQUESTS CONNECTIONS
// MODE: pelt-run (pelt's run()), pelt-loadtest (pelt's loadTest()), loadtest (loadtest 8's
// own loadTest()), autocannon (autocannon's API). One thread for pelt, keep-alive for all.
const path = require('node:path')
const [mode, url, requests, connections] = process.argv.slice(2)
const n = Number(requests)
const c = Number(connections)
const peers = path.join(__dirname, 'node_modules')

async function main() {
  const started = process.hrtime.bigint()
  let done
  if (mode === 'pelt-run') {
    const { run } = require('../../bindings/node/pelt.js')
    const r = await run({ url, requests: n, connections: c, threads: 1 })
    done = r.requests.completed
  } else if (mode === 'pelt-loadtest') {
    const { loadTest } = require('../../bindings/node/pelt.js')
    const r = await loadTest({ url, maxRequests: n, concurrency: c, agentKeepAlive: true })
    done = r.totalRequests
  } else if (mode === 'loadtest') {
    const { loadTest } = await import(path.join(peers, 'loadtest', 'index.js'))
    const r = await loadTest({ url, maxRequests: n, concurrency: c, agentKeepAlive: true, quiet: true })
    done = r.totalRequests
  } else if (mode === 'autocannon') {
    const autocannon = require(path.join(peers, 'autocannon'))
    const r = await autocannon({ url, amount: n, connections: c })
    done = r.requests.total
  } else {
    throw new Error(`unknown mode ${mode}`)
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  console.log(JSON.stringify({ requests: done, seconds }))
}

main().catch(e => { console.error(e); process.exit(1) })
