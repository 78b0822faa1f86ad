"""jaxcredit.analysis: label reliability audits, action classes, paired comparisons, the ranking
study, CA-ID cards, plots and reports. Reads run directories (plain JSON) and checkpoints; never imports the trainer."""

from jaxcredit.analysis.audit import (
    AUDIT_MODES,
    credit_from_q,
    mc_error_by_k,
    run_audit,
    sign_agreement,
    split_half_correlation,
)
from jaxcredit.analysis.audit_sampled import (
    action_values,
    run_sampled,
    sample_completions,
    sampled_audit,
    sampled_markdown,
)
from jaxcredit.analysis.card import CAIDCard, card_for_audit, card_for_config, cards_for_sweep, cards_markdown
from jaxcredit.analysis.classes import (
    ABSOLUTE_TOLERANCE,
    CLASSES,
    RELATIVE_TOLERANCE,
    class_summary,
    classify_actions,
    format_class_table,
)
from jaxcredit.analysis.compare import (
    MEASURES,
    compare_arms,
    compare_sweep,
    format_comparison_table,
    learning_curve,
    paired_comparison,
)
from jaxcredit.analysis.exact import REFERENCE_POLICIES, exact_credit, exact_step_values
from jaxcredit.analysis.families import evaluation_families, family_comparisons, family_rows
from jaxcredit.analysis.final_context import final_context_markdown, final_context_summary
from jaxcredit.analysis.findings import findings_lines, not_shown_lines
from jaxcredit.analysis.gates import gate_status, read_gates
from jaxcredit.analysis.label_measures import label_measures
from jaxcredit.analysis.page import write_results_page
from jaxcredit.analysis.plots import plot_credit_by_type, plot_learning_curves, plot_mc_error
from jaxcredit.analysis.predictor import predictor_accuracy_markdown
from jaxcredit.analysis.prepared import PREPARED_VIEWS, PreparedView, prepared_sections, register_prepared_view
from jaxcredit.analysis.ranking import RANK_CLASSES, collect_steps, rank_trajectory, ranking_measures, run_ranking
from jaxcredit.analysis.ranking_report import plot_ranking, ranking_markdown
from jaxcredit.analysis.report import audit_markdown_summary, markdown_links, write_audit, write_report
from jaxcredit.analysis.rundirs import kind_of, read_json, read_jsonl, seed_measures, sweep_cells

__all__ = [
    "evaluation_families",
    "family_comparisons",
    "family_rows",
    "findings_lines",
    "gate_status",
    "read_gates",
    "not_shown_lines",
    "prepared_sections",
    "PREPARED_VIEWS",
    "PreparedView",
    "predictor_accuracy_markdown",
    "register_prepared_view",
    "RANK_CLASSES",
    "collect_steps",
    "label_measures",
    "plot_ranking",
    "rank_trajectory",
    "ranking_markdown",
    "ranking_measures",
    "run_ranking",
    "ABSOLUTE_TOLERANCE",
    "AUDIT_MODES",
    "CAIDCard",
    "CLASSES",
    "MEASURES",
    "REFERENCE_POLICIES",
    "RELATIVE_TOLERANCE",
    "action_values",
    "audit_markdown_summary",
    "card_for_audit",
    "card_for_config",
    "cards_for_sweep",
    "cards_markdown",
    "class_summary",
    "classify_actions",
    "compare_arms",
    "compare_sweep",
    "credit_from_q",
    "exact_credit",
    "exact_step_values",
    "final_context_markdown",
    "final_context_summary",
    "format_class_table",
    "format_comparison_table",
    "kind_of",
    "learning_curve",
    "markdown_links",
    "mc_error_by_k",
    "paired_comparison",
    "plot_credit_by_type",
    "plot_learning_curves",
    "plot_mc_error",
    "read_json",
    "read_jsonl",
    "run_audit",
    "run_sampled",
    "sample_completions",
    "sampled_audit",
    "sampled_markdown",
    "seed_measures",
    "sign_agreement",
    "split_half_correlation",
    "sweep_cells",
    "write_audit",
    "write_report",
    "write_results_page",
]
