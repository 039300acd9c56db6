// autocannon's README examples, typed: type-checked in CI with `npm run typecheck`.
import autocannon = require('../autocannon')
import { startServer } from '../pelt'

async function main(): Promise<void> {
  const server = await startServer({})
  // Callback and promise forms.
  autocannon({ url: server.url, connections: 10, pipelining: 1, duration: 1 }, (err, result) => {
    if (err) throw err
    process.stdout.write(autocannon.printResult(result))
  })
  const result: autocannon.AutocannonResult = await autocannon({ url: server.url, amount: 1000 })
  console.log(`${result.requests.sent} sent, p99 ${result.latency.p99} ms, ${result.throughput.total} bytes`)
  // Events, a client's listeners, stop() and track().
  const instance = autocannon({
    url: server.url,
    duration: 2,
    setupClient: client => client.on('body', (body: Buffer) => console.log(body.length)),
    requests: [{ method: 'POST', path: '/login', body: 'user' }, { path: '/items' }],
  })
  instance.on('tick', ({ counter, bytes }) => console.log(counter, bytes))
  instance.on('response', (_client, statusCode, resBytes, responseTime) => console.log(statusCode, resBytes, responseTime))
  autocannon.track(instance, { renderProgressBar: false })
  setTimeout(() => instance.stop(), 500)
  await instance
  await server.close()
}

main()
