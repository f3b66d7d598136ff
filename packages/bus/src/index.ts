// KafkaBus lives behind `@plover/bus/kafka` so that embedded mode never loads kafkajs.
export * from './port';
export { LocalLogBus } from './local-log';
export type { LocalLogBusOptions } from './local-log';
export { repairLocalLog } from './local-log/repair';
export type { DamagedPartition } from './local-log/repair';
