export * from './types';
export * from './properties';
export { Params } from './params';
export { resolveRange } from './dates';
export { BREAKDOWN_OTHER, runTrends } from './trends';
export { insightRange } from './range';
export * from './correlation';
export * from './filters';
export * from './cache';
