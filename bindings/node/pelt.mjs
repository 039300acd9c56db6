// pelt for `import`: `import {run, startServer} from 'pelt'`.
import pelt from './pelt.js'

export const { run, check, compare, findMax, startServer, serverNow, loadTest, Run, LoadtestResult } = pelt
export default pelt
