// pelt/autocannon for `import`: autocannon's documented forms, `import autocannon from
// 'autocannon'` and its named helpers, work with 'pelt/autocannon'.
import autocannon from './autocannon.js'

export const { track, printResult, aggregateResult } = autocannon
export default autocannon
