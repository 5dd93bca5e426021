// Fast tests: unit and integration (real HTTP servers on port 0, real CLIs). Compiled by tsc into dist/.
export default {
  files: ['dist/test/**/*.test.js', '!dist/test/**/*.vm.test.js'],
  timeout: '60s',
  concurrency: 2,
  workerThreads: false,
};
