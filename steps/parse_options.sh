# steps/parse_options.sh: the --name value options of asrkit's recipes and steps (Kaldi's habit), sourced
# after the script has set each option's default:
#
#   nj=2; cmd=run-local; overwrite=false
#   help_message="Usage: steps/x.sh [options] <in-dir> <out-dir>"
#   . "$ASRKIT_ROOT/steps/parse_options.sh"      # then "$@" holds the positional arguments
#
# --some-name VALUE sets the variable some_name, which must already be set (an option nobody declared is a
# typo: an error, exit 2).  A variable whose default is true or false takes only true or false.  The names
# in $switch_options take no value: --name sets name=true.  --config FILE, first, sources FILE (a file of
# name=value lines) before the other options override it.  -h or --help prints $help_message (a recipe's
# default: its header comment) and exits 0;
# -- ends the options.  After it, parse_command_line holds the command line as given (words quoted where
# they need it), for the script's log and record.
#
# Checks a script asks for after parsing (each an error naming the option, exit 2):
#   require_choice NAME VALUE...      the value of NAME is one of the VALUEs
#   require_whole_number NAME...      each NAME's value is a whole number (0, 1, 2, ...)
#   require_no_arguments "$@"         a recipe's: no positional argument is left

# printf repeats its format at least once, so with no arguments it would write a stray ''.
parse_command_line="$0"
if [ $# -gt 0 ]; then parse_command_line+="$(printf ' %q' "$@")"; fi

if [ "${1:-}" = --config ]; then
  [ $# -ge 2 ] || { echo "$0: --config needs a file" >&2; exit 2; }
  [ -f "$2" ] || { echo "$0: --config $2: no such file" >&2; exit 2; }
  # shellcheck disable=SC1090
  . "$2"
  shift 2
fi

while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -h|--help)
      # Without help_message, the script's header comment (its lines 2.. up to the first that is not one).
      if [ -n "${help_message:-}" ]; then printf '%s\n' "$help_message"
      else sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; fi
      exit 0 ;;
    --*=*) echo "$0: write '${1%%=*} ${1#*=}', not '$1'" >&2; exit 2 ;;
    --?*) ;;
    *) break ;;
  esac
  parse_option_name="${1#--}"
  parse_option_name="${parse_option_name//-/_}"
  case "$parse_option_name" in
    *[!a-z0-9_]*|[0-9]*) echo "$0: unknown option '$1' (see $0 --help)" >&2; exit 2 ;;
  esac
  if [ -z "${!parse_option_name+set}" ]; then
    echo "$0: unknown option '$1' (see $0 --help)" >&2
    exit 2
  fi
  if [[ " ${switch_options:-} " == *" $parse_option_name "* ]]; then
    printf -v "$parse_option_name" '%s' true
    shift
    continue
  fi
  [ $# -ge 2 ] || { echo "$0: option '$1' needs a value" >&2; exit 2; }
  case "${!parse_option_name}" in
    true|false)
      case "$2" in
        true|false) ;;
        *) echo "$0: $1 must be true or false, not '$2'" >&2; exit 2 ;;
      esac ;;
  esac
  printf -v "$parse_option_name" '%s' "$2"
  shift 2
done
unset parse_option_name

# require_choice NAME VALUE...: the option NAME's value is one of the VALUEs ("--name must be a, b or c").
require_choice() {
  local name="$1" value allowed=
  shift
  for value in "$@"; do
    [ "${!name}" = "$value" ] && return 0
  done
  allowed="$(printf '%s, ' "$@")"
  allowed="${allowed%, }"
  [ $# -gt 1 ] && allowed="${allowed%, *} or ${allowed##*, }"
  echo "$0: --${name//_/-} must be $allowed, not '${!name}'" >&2
  exit 2
}

# require_whole_number NAME...: each option's value is a whole number.
require_whole_number() {
  local name
  for name in "$@"; do
    case "${!name}" in
      ''|*[!0-9]*) echo "$0: --${name//_/-} takes a whole number, not '${!name}'" >&2; exit 2 ;;
    esac
  done
}

# require_no_arguments "$@": nothing is left after the options (a recipe takes options only).
require_no_arguments() {
  [ $# -eq 0 ] || { echo "$0: unexpected argument '$1' (options only; see $0 --help)" >&2; exit 2; }
}
