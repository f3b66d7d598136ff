// The parts of jStat (https://jstat.github.io) the experiment statistics use; the package ships no types.
declare module 'jstat' {
  interface Distribution {
    cdf(x: number, ...params: number[]): number;
    inv(p: number, ...params: number[]): number;
  }
  const jStat: { normal: Distribution; studentt: Distribution };
  export default jStat;
}
