/** Per-variant sufficient statistics, as the experiment query computes them (one row per variant). */
export interface VariantSufficientStats {
  key: string;
  /** Exposed units (persons or groups) in the variant. */
  number_of_samples: number;
  /** Σ of the per-unit metric value (conversions for funnels and retention, the numerator for ratios). */
  sum: number;
  /** Σ of the squared per-unit value. */
  sum_squares: number;
  /** Ratio and retention metrics: Σ of the per-unit denominator. */
  denominator_sum?: number;
  /** Ratio and retention metrics: Σ of the squared per-unit denominator. */
  denominator_sum_squares?: number;
  /** Ratio and retention metrics: Σ of numerator × denominator per unit. */
  numerator_denominator_sum_product?: number;
  /** Funnel metrics: units reaching each step. */
  step_counts?: number[];
}

export type ExperimentMetricType = 'mean' | 'funnel' | 'ratio' | 'retention';
export type ExperimentStatsMethod = 'bayesian' | 'frequentist';
export type ExperimentDifferenceType = 'relative' | 'absolute';

export type ExperimentValidationFailure = 'not-enough-exposures' | 'not-enough-metric-data' | 'baseline-mean-is-zero';

export interface ExperimentStatsOptions {
  metric_type: ExperimentMetricType;
  /** Which direction is a win; `decrease` makes chance to win P(effect < 0). Default `increase`. */
  goal?: 'increase' | 'decrease';
  /** Default `bayesian`. */
  method?: ExperimentStatsMethod;
  /** Credible (Bayesian) or confidence (frequentist, alpha = 1 − ci_level) level. Default 0.95. */
  ci_level?: number;
  /** The effect compared: (test − control) / control (default) or test − control. */
  difference_type?: ExperimentDifferenceType;
}

export type ValidatedVariantStats = VariantSufficientStats & { validation_failures: ExperimentValidationFailure[] };

export interface ExperimentVariantResultBayesian extends ValidatedVariantStats {
  method: 'bayesian';
  chance_to_win: number | null;
  credible_interval: [number, number] | null;
  significant: boolean | null;
}

export interface ExperimentVariantResultFrequentist extends ValidatedVariantStats {
  method: 'frequentist';
  p_value: number | null;
  confidence_interval: [number, number] | null;
  significant: boolean | null;
}

export type ExperimentVariantResult = ExperimentVariantResultBayesian | ExperimentVariantResultFrequentist;

export interface ExperimentResults {
  baseline: ValidatedVariantStats;
  variant_results: ExperimentVariantResult[];
}
