// Tests that boot VMs under libvirt: run one file at a time (2 cores, TCG).
export default {
  files: ['dist/test/**/*.vm.test.js'],
  timeout: '10m',
  concurrency: 1,
  workerThreads: false,
};
