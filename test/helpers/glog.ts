/** A glog line of pivot (openshift/pivot's `Lmmdd hh:mm:ss.uuuuuu pid file:line] text`) as the console shows it. */
export const glog = (level: string, file: string, text: string) =>
  new RegExp(`pivot\\[\\d+\\]: ${level}\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} +\\d+ ${file}\\] ${text}`);
