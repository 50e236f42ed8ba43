#!/usr/bin/env bash
# steps/make_results.sh: a recipe's results table and its training curves.
set -euo pipefail

command_line=
recipe=
plot_models=
help_message="Usage: steps/make_results.sh [options] <exp-dir>
 e.g.: steps/make_results.sh --recipe voicesearch --plot-models 'lstm_ce lstm_smbr' exp
The results table of every model decoded under <exp-dir> -> <exp-dir>/RESULTS (steps/make_results.py),
printed; and the training curves of each of --plot-models -> <exp-dir>/<model>/training.png.
Options:
  --command-line 'LINE'    the recipe's command line, for the table's header (default: none)
  --recipe NAME            the recipe's name (default: none)
  --plot-models 'M...'     models whose training curves are plotted (default: none)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 1 ] || usage_error "expected 1 argument, got $#" "$help_message"
echo "$parse_command_line" >&2
exp_dir="$1"
require_files "$exp_dir"
python "$(dirname "$0")/make_results.py" --command "$command_line" --recipe "$recipe" "$exp_dir" > "$exp_dir/RESULTS.tmp"
mv "$exp_dir/RESULTS.tmp" "$exp_dir/RESULTS"
cat "$exp_dir/RESULTS"
for model in $plot_models; do
  python "$(dirname "$0")/plot_training.py" "$exp_dir/$model/tensorboard" "$exp_dir/$model/training.png" \
    || echo "note: no plot for $model (see the error above); going on" >&2
done
record_options "$exp_dir" make_results "$parse_command_line" command_line recipe plot_models
