// Tests that boot VMs under libvirt: two files at a time (2 cores, TCG; each file boots one or two VMs at once),
// which keeps `npm test` under 45 minutes. Every test names its own session, so files never share a domain.
export default {
  files: ['dist/test/**/*.vm.test.js'],
  timeout: '10m',
  concurrency: 2,
  workerThreads: false,
};
