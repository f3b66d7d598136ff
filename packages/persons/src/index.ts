export { storableJson, storableText, type Properties } from './json';
export type { PersonWarning } from './warnings';
export type { PersonOverride } from './person-repository';
export { PersonStore, type DeletedPerson, type PropertiesUpdate } from './person-store';
export type { EventPerson, EventPersonStore, PersonEvent, PersonMode } from './person-event';
export {
  EXACT_COUNT_CAP,
  PersonReads,
  cohortPeopleSql,
  type ListedPerson,
  type Person,
  type PersonCondition,
  type PersonCursor,
  type PersonListFilter,
  type PersonPage,
} from './person-reads';
export type { BatchPersonStore } from './batch-person-store';
export type { StagedChange } from './person-snapshot';
export { PersonWriteConflict } from './transactions';
export { GroupStore, type EventGroup, type Group, type GroupEvent, type GroupListRow, type GroupTypeMapping } from './group-store';
export { MAX_PROPERTIES_BYTES } from './rules/properties';
export { PERSON_UUID_NAMESPACE, PERSONLESS_CREATED_AT, isPersonless, personUuid } from './rules/identity';
export { MAX_GROUP_TYPES, isGroupIdentify } from './rules/groups';
