#!/usr/bin/env python3
"""gen_docs: the man pages and the shell completion of Tracery's programs,
generated at build time from the programs' own definitions of their command
lines (`PROGRAM --dump-cli-json`: the verbs, options and help lines CLI11
shows in --help), so that they never say something else than --help.

    gen_docs.py --tracery JSON --traceryd JSON --relayd JSON --readme README.md
                --ctl-header include/tracery/ctl.h --manual-dir DIR --version V --out DIR

writes into --out:
    man/man1/tracery.1.gz, man/man1/tracery-VERB.1.gz (every verb, sub-verbs
    as tracery-snapshot-record.1.gz), man/man8/traceryd.8.gz,
    man/man8/tracery-relayd.8.gz, man/man3/tracery.3.gz and
    man/man3/tracery-ctl.3.gz (the hand-written pages of --manual-dir, with
    libtracery's environment variables taken from the README's table),
    completion/tracery (bash), completion/_tracery (zsh). The man pages are
    compressed as Debian's policy wants them installed (gzip -9n: no name, no
    time stamp, so that a build makes the same bytes each time); man reads
    them so wherever they are.
"""

import argparse
import gzip
import json
import os
import re

# The tracery command's own environment (libtracery's comes from the README).
COMMAND_ENVIRONMENT = [
    ("TRACERY_RUNDIR", "The session daemon's run directory (its socket and pid file), for the command, the "
     "programs and traceryd alike. Default: /run/tracery for root (the system daemon), $XDG_RUNTIME_DIR/tracery "
     "or else ~/.tracery for other users, who also find the system daemon when theirs does not answer."),
    ("TRACERY_NO_AUTOSTART", "When set (other than to 0), create, load, exec and add-trigger (and libtracery-ctl's "
     "setup, session creation and add-trigger) do not start a session daemon when none answers; they fail "
     "instead."),
    ("TRACERY_SESSIONS_DIR", "Where save writes and load reads session files (default: ~/.tracery/sessions; "
     "root: /etc/tracery/sessions)."),
    ("HOME", "The current session is remembered in ~/.tracery/current; traces go to ~/tracery-traces by default."),
    ("XDG_RUNTIME_DIR", "The per-user daemon's run directory is $XDG_RUNTIME_DIR/tracery when it is set."),
]

DAEMON_ENVIRONMENT = [
    ("TRACERY_RUNDIR", "The run directory when --rundir is not given."),
    ("LISTEN_FDS, LISTEN_PID", "Socket activation (traceryd.socket): the listening socket systemd passes as "
     "descriptor 3 is served instead of one the daemon makes."),
    ("NOTIFY_SOCKET", "Under systemd (Type=notify): READY=1 is sent once the daemon serves, STOPPING=1 when it "
     "stops."),
    ("JOURNAL_STREAM", "When stderr is the journal, log lines carry their priority as <N> and no time stamp."),
]


def roff(text):
    """Plain text made safe for roff: backslashes, and a line-leading '.' or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in text.split("\n"))


def option_synopsis(o):
    names = [f"-{s}" for s in o["short"]] + [f"--{n}" for n in o["long"]]
    head = ", ".join(f"\\fB{roff(n)}\\fR" for n in names)
    if o["value"]:
        value = f"\\fI{roff(o['value'])}\\fR"
        head += f" [{value}]" if o["value_optional"] else f" {value}"
    return head


def positionals(cli):
    return [o for o in cli["options"] if o["positional"]]


def flags_and_options(cli):
    return [o for o in cli["options"] if not o["positional"]]


def usage(words, cli):
    parts = [f"\\fB{roff(' '.join(words))}\\fR"]
    if flags_and_options(cli):
        parts.append("[\\fIOPTIONS\\fR]")
    if cli["verbs"]:
        parts.append("\\fIVERB\\fR")
    for p in positionals(cli):
        name = f"\\fI{roff(p['positional'])}\\fR" + ("..." if p["repeatable"] else "")
        parts.append(name if p["required"] else f"[{name}]")
    return " ".join(parts)


def page(name, section, version, summary, sections):
    # .nh .ad l: option and page names are never hyphenated nor spread
    out = [f'.TH "{name.upper()}" "{section}" "" "Tracery {version}" "Tracery manual"', ".nh", ".ad l",
           ".SH NAME", f"{roff(name)} \\- {roff(summary)}"]
    for title, body in sections:
        if body:
            out += [f".SH {title}", body]
    return "\n".join(out) + "\n"


def options_section(cli):
    lines = []
    for o in positionals(cli) + flags_and_options(cli):
        lines += [".TP", f"\\fI{roff(o['positional'])}\\fR" if o["positional"] else option_synopsis(o),
                  roff(o["description"]) or "(no description)"]
    return "\n".join(lines)


def environment_section(variables):
    lines = []
    for name, text in variables:
        lines += [".TP", f"\\fB{roff(name)}\\fR", roff(text)]
    return "\n".join(lines)


def first_sentence(text):
    return text.split("\n")[0]


def walk_verbs(cli, words):
    """(words, definition) of every verb under cli, depth first."""
    for verb in cli["verbs"]:
        path = words + [verb["name"]]
        yield path, verb
        yield from walk_verbs(verb, path)


def readme_environment(readme):
    """libtracery's variables: the rows `| `TRACERY_X...` | what | default |` of the README."""
    rows = []
    for line in open(readme, encoding="utf-8"):
        m = re.match(r"^\| `(TRACERY_[A-Z_]+)[^`]*` \| (.*) \| (.*) \|$", line.strip())
        if m:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2)).replace("`", "")
            rows.append((m.group(1), f"{text} (default: {m.group(3).replace('`', '')})"))
    return rows


def ctl_declarations(header):
    """The functions of include/tracery/ctl.h (TRACERY_CTL_API ...;), one a line, or a pointer to the header
    while the library is not in the tree."""
    if not os.path.exists(header):
        return "The declarations: <tracery/ctl.h>."
    text = re.sub(r"/\*.*?\*/", "", open(header, encoding="utf-8").read(), flags=re.S)
    found = re.findall(r"TRACERY_CTL_API\s+([^;{#]*?\));", text, flags=re.S)
    return "\n".join(roff(" ".join(d.split())) + ";" for d in found)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_gzip(path, text):
    """TEXT written to PATH.gz as `gzip -9n` would (a man page, a changelog)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".gz", "wb") as f, gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=f,
                                                       mtime=0) as z:
        z.write(text.encode("utf-8"))


def man_pages(args, tracery, traceryd, relayd, out):
    version = args.version
    verb_pages = []
    for words, verb in walk_verbs(tracery, ["tracery"]):
        name = "-".join(words)
        verb_pages.append((name, verb))
        subverbs = "\n".join(f".TP\n\\fB{roff(' '.join(words + [v['name']]))}\\fR\n{roff(v['description'])}"
                             for v in verb["verbs"])
        write_gzip(f"{out}/man/man1/{name}.1", page(name, 1, version, first_sentence(verb["description"]), [
            ("SYNOPSIS", usage(words, verb)),
            ("DESCRIPTION", roff(verb["description"])),
            ("VERBS", subverbs),
            ("OPTIONS", options_section(verb)),
            ("SEE ALSO", "\\fBtracery\\fR(1)" + "".join(
                f", \\fB{roff('-'.join(words + [v['name']]))}\\fR(1)" for v in verb["verbs"]))]))
    verbs = "\n".join(f".TP\n\\fB{roff(v['name'])}\\fR\n{roff(v['description'])} (\\fB{roff('tracery-' + v['name'])}"
                      f"\\fR(1))" for v in tracery["verbs"])
    write_gzip(f"{out}/man/man1/tracery.1", page("tracery", 1, version, "control tracing sessions and read traces", [
        ("SYNOPSIS", usage(["tracery"], tracery) + "\n.br\n\\fBtracery help\\fR \\fIVERB\\fR"),
        ("DESCRIPTION", roff(tracery["description"]) + "\n.PP\n" + roff(
            "Each verb has its page, tracery-VERB(1), and its --help (also `tracery help VERB`).")),
        ("VERBS", verbs),
        ("OPTIONS", options_section(tracery)),
        ("ENVIRONMENT", environment_section(COMMAND_ENVIRONMENT)),
        ("FILES", "\n.br\n".join(roff(line) for line in (
            "~/.tracery/current: the current session.",
            "~/.tracery/sessions/, /etc/tracery/sessions/: session files (save, load)."))),
        ("SEE ALSO", "\\fBtraceryd\\fR(8), \\fBtracery\\-relayd\\fR(8), \\fBtracery\\fR(3), \\fBtracery\\-ctl\\fR(3)")]))
    for name, cli, env, summary in [
            ("traceryd", traceryd, DAEMON_ENVIRONMENT, "the Tracery session daemon"),
            ("tracery-relayd", relayd, [], "the Tracery relay daemon")]:
        write_gzip(f"{out}/man/man8/{name}.8", page(name, 8, version, summary, [
            ("SYNOPSIS", usage([name], cli)),
            ("DESCRIPTION", roff(cli["description"])),
            ("OPTIONS", options_section(cli)),
            ("ENVIRONMENT", environment_section(env)),
            ("SEE ALSO", "\\fBtracery\\fR(1)" + (", \\fBsystemd.socket\\fR(5), \\fBsd_notify\\fR(3)"
                                                  if name == "traceryd" else ""))]))
    library_environment = environment_section(readme_environment(args.readme))
    for name in ("tracery.3", "tracery-ctl.3"):
        with open(os.path.join(args.manual_dir, name + ".in"), encoding="utf-8") as f:
            text = f.read()
        text = text.replace("@VERSION@", version).replace("@LIBRARY_ENVIRONMENT@", library_environment)
        write_gzip(f"{out}/man/man3/{name}", text.replace("@CTL_DECLARATIONS@", ctl_declarations(args.ctl_header)))
    return verb_pages


# ---- completion

def value_kind(words, option):
    """What the value of an option or positional completes to: session, sessions-or-paths, event, channel,
    file, or none."""
    verb = " ".join(words[1:])
    names = set(option["long"]) | set(option["short"])
    if names & {"session"} or (verb != "create" and option["positional"] in ("NAME", "SESSION")
                               and "Session" in option["description"]):
        return "session"
    if names & {"channel"}:
        return "channel"
    if option["positional"] == "PATTERN":
        return "event"
    if option["positional"] in ("TARGET", "ARGS"):
        return "target"
    if names & {"output", "path", "output-path", "input-path", "relay-key", "relay-ca", "log-file", "rundir",
                "debug-info-dir", "auth-keys", "tls-cert", "tls-key"} or option["positional"] in ("COMMAND", "URL"):
        return "file"
    return ""


def bash_completion(tracery):
    # Keyed by the verb's words, "tracery" first (zsh has no empty key).
    verbs, options, valued, kinds = {"tracery": [v["name"] for v in tracery["verbs"]]}, {}, {}, {}
    options["tracery"] = [f"--{n}" for o in flags_and_options(tracery) for n in o["long"]]
    for words, verb in walk_verbs(tracery, ["tracery"]):
        key = " ".join(words)
        verbs[key] = [v["name"] for v in verb["verbs"]]
        options[key] = []
        valued[key] = []
        for o in verb["options"]:
            kind = value_kind(words, o)
            if o["positional"]:
                if kind and key + " @" not in kinds:
                    kinds[key + " @"] = kind
                continue
            names = [f"-{s}" for s in o["short"]] + [f"--{n}" for n in o["long"]]
            options[key] += names
            if o["value"]:
                valued[key] += names
                for n in names:
                    kinds[f"{key} {n}"] = kind

    def table(name, entries):
        return "\n".join([f"declare -gA {name}=("] + [f"  [{json.dumps(k)}]={json.dumps(' '.join(v))}"
                                                        for k, v in sorted(entries.items())] + [")"])
    kinds_table = "\n".join(["declare -gA _tracery_kinds=("] + [f"  [{json.dumps(k)}]={json.dumps(v)}"
                                                               for k, v in sorted(kinds.items())] + [")"])
    return f"""# bash completion for tracery, generated from `tracery --dump-cli-json` (packaging/gen_docs.py):
# verbs, options, session names (tracery list), event names (tracery list -u, -k), channel names
# (tracery status).
{table("_tracery_verbs", verbs)}
{table("_tracery_options", options)}
{table("_tracery_valued", valued)}
{kinds_table}

# Names the daemon knows, one a line: sessions, events (-k: the kernel's), channels of a session.
_tracery_sessions() {{ tracery list 2>/dev/null | sed -n 's/^  [0-9][0-9]*) \\([^ ]*\\).*/\\1/p'; }}
# (-k: tracepoints as SYSTEM:NAME and NAME, as enable-event -k takes them)
_tracery_events() {{
  tracery list "$1" 2>/dev/null | sed -n 's/^      \\([^ ]*\\).*/\\1/p' |
    if [[ $1 == -k ]]; then sed 'p; s/^[^:]*://' | sort -u; else cat; fi
}}
_tracery_channels() {{
  tracery status ${{1:+"$1"}} 2>/dev/null | sed -n 's/^  \\(kernel \\)\\{{0,1\\}}channel \\([^:]*\\):.*/\\2/p'
}}

_tracery_complete() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local verb=tracery session="" domain=-u i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${{COMP_WORDS[i]}}
    case $w in
      -k|--kernel) domain=-k ;;
      -s|--session) session=${{COMP_WORDS[i+1]}} ;;
    esac
    if [[ $w != -* && " ${{_tracery_verbs[$verb]}} " == *" $w "* ]]; then
      verb="$verb $w"
    fi
  done
  local kind=""
  if [[ $prev == -* && " ${{_tracery_valued[$verb]}} " == *" $prev "* ]]; then
    kind=${{_tracery_kinds["$verb $prev"]}}
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${{_tracery_options[$verb]}}" -- "$cur"))
    return
  elif [[ -n ${{_tracery_verbs[$verb]}} ]]; then
    COMPREPLY=($(compgen -W "${{_tracery_verbs[$verb]}}" -- "$cur"))
    return
  else
    kind=${{_tracery_kinds["$verb @"]}}
  fi
  case $kind in
    session) COMPREPLY=($(compgen -W "$(_tracery_sessions)" -- "$cur")) ;;
    channel) COMPREPLY=($(compgen -W "$(_tracery_channels "$session")" -- "$cur")) ;;
    event) COMPREPLY=($(compgen -W "$(_tracery_events "$domain")" -- "$cur")) ;;
    # a name is a session; a directory is written with a '/' or a leading '.'
    target) if [[ $cur == */* || $cur == .* ]]; then COMPREPLY=($(compgen -d -- "$cur"))
            else COMPREPLY=($(compgen -W "$(_tracery_sessions)" -- "$cur")); fi ;;
    file) COMPREPLY=($(compgen -f -- "$cur")) ;;
  esac
}}
complete -F _tracery_complete tracery
"""


def zsh_completion():
    # zsh runs the bash completion through bashcompinit: one definition of the verbs and their values.
    return """#compdef tracery
# zsh completion for tracery: the bash completion (generated from `tracery --dump-cli-json`), run through
# zsh's bashcompinit, so that both shells complete the same verbs, options, sessions, events and channels.
# This first call loads it (its `complete` makes it tracery's completion from then on) and hands over.
autoload -U +X bashcompinit && bashcompinit
local bash_file
for bash_file in ${functions_source[_tracery]:A:h}/../../bash-completion/completions/tracery \\
                 /usr/share/bash-completion/completions/tracery /usr/local/share/bash-completion/completions/tracery; do
  [[ -r $bash_file ]] && source $bash_file && break
done
_bash_complete -F _tracery_complete
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("tracery", "traceryd", "relayd", "readme", "ctl-header", "manual-dir", "version", "out"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    load = lambda p: json.load(open(p, encoding="utf-8"))
    tracery, traceryd, relayd = load(args.tracery), load(args.traceryd), load(args.relayd)
    man_pages(args, tracery, traceryd, relayd, args.out)
    write(f"{args.out}/completion/tracery", bash_completion(tracery))
    write(f"{args.out}/completion/_tracery", zsh_completion())


if __name__ == "__main__":
    main()
