/** ClickHouse's UTC `DateTime64` text (`2024-05-01 12:00:00.000000`) as a Date. */
export function clickHouseTime(text: string): Date {
  return new Date(`${text.replace(' ', 'T')}Z`);
}
