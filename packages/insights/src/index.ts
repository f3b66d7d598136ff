export * from './types';
export * from './properties';
export { Params } from './params';
export { resolveRange } from './dates';
export { BREAKDOWN_OTHER, runTrends, trendRange } from './trends';
export * from './filters';
