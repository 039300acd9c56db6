// pelt/loadtest for `import`: loadtest's documented import line,
// `import {loadTest, startServer} from 'loadtest'`, works with 'pelt/loadtest'.
import loadtest from './loadtest.js'

export const { loadTest, startServer, LoadtestResult } = loadtest
export default loadtest
