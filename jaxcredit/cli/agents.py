"""`jaxcredit agent play` and `audit transcripts`: language-model agents played through the text
protocols (`jaxcredit.agents`), and the audit of the transcripts they leave (`jaxcredit.analysis.lm_report`)."""

from __future__ import annotations

import sys

from jaxcredit.cli.common import CommandError, integer, print_json, seconds
from jaxcredit.env import MAX_TURNS
from jaxcredit.output_dirs import check_kind
from jaxcredit.rundir_io import check_writable_dir


def _cmd_agent_play(args) -> None:
    from jaxcredit.agents import draw_problems, make_agent, play_into
    from jaxcredit.envs import make

    env = make(args.env, **({"family": args.family} if args.family else {}),
               **({} if args.turns is None else {"max_turns": args.turns}))
    agent, name = make_agent(args.agent, seed=args.seed, base_url=args.base_url, model=args.model,
                             **({"api_key_env": args.api_key_env, "timeout": args.timeout, "retries": args.retries,
                                 "max_reply_bytes": args.max_reply_bytes,
                                 "temperature": args.temperature, "max_tokens": args.max_tokens, "system": args.system}
                                if args.agent == "http" else {}))
    summary = play_into(args.out, env, agent, draw_problems(env, args.problems, args.seed), agent_name=name,
                        protocol=args.protocol, progress=not args.no_progress)
    if args.json:
        print_json(summary)
    else:
        print(f"{name} on {env.name} ({args.protocol} protocol): solved {summary['solved']} of {summary['played']} "
              f"played ({summary['problems']} drawn); transcripts in {summary['transcripts']}")
    if summary["error"]:
        raise CommandError(f"the agent failed: {summary['error']} (the transcripts keep what was played)")


def audit_transcripts(args) -> None:
    from jaxcredit.analysis.lm_report import audit_transcript_file, transcript_audit_markdown

    if args.file is None or not args.out:
        raise CommandError("audit transcripts needs FILE and --out DIR")
    check_kind(check_writable_dir(args.out), "transcript-audit", "audit transcripts")
    bars = []  # started at the first audited transcript, so a refused file gives only its one line

    def progress() -> None:
        if not bars:
            from tqdm import tqdm

            bars.append(tqdm(desc="audit transcripts", unit="transcript", file=sys.stderr))
        bars[0].update(1)

    try:
        audit = audit_transcript_file(args.file, args.out, progress=None if args.no_progress else progress)
    finally:
        for bar in bars:
            bar.close()
    if args.json:
        print_json({"summary": audit["summary"], "transcripts": audit["transcripts"], "report": audit["report"]})
    else:
        print(transcript_audit_markdown(audit, source=args.file))
        print(f"report {audit['report']}; per-turn labels and credit_labels.jsonl beside it")


def add_agent(commands) -> None:
    agent = commands.add_parser("agent", help="play a language-model agent through a text protocol")
    agent_commands = agent.add_subparsers(dest="agent_command", required=True, metavar="COMMAND")
    play = agent_commands.add_parser("play", help="play N problems, write transcripts JSONL to --out")
    play.add_argument("--env", default="arithmetic", choices=["arithmetic", "mad"], help="which environment")
    play.add_argument("--family", help="arithmetic problem family (default: default)")
    play.add_argument("--protocol", default="text", choices=["text", "menu"], help="text commands or lettered menu")
    play.add_argument("--agent", required=True, choices=["http", "uniform", "optimal"], help="which agent")
    play.add_argument("--base-url", help="http: the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    play.add_argument("--model", help="http: the model name")
    play.add_argument("--api-key-env", default="OPENAI_API_KEY", help="http: environment variable with the API key")
    play.add_argument("--timeout", type=seconds, default=60.0,
                      help="http: seconds for each whole request: connect, send and read the full reply (default 60)")
    play.add_argument("--max-reply-bytes", type=integer(1), default=65536,
                      help="http: the longest reply in bytes (default 65536); a longer one is an invalid reply, "
                           "played as a refused turn and recorded with its reason")
    play.add_argument("--retries", type=integer(0, 100), default=2, help="http: retries per request (default 2)")
    play.add_argument("--temperature", type=float, default=0.0, help="http: sampling temperature (default 0)")
    play.add_argument("--max-tokens", type=integer(1), default=256, help="http: max tokens per reply")
    play.add_argument("--system", help="http: a system message")
    play.add_argument("--problems", type=integer(1), default=10, help="how many problems (default 10)")
    play.add_argument("--seed", type=integer(), default=0, help="seed of the problems (and the uniform agent)")
    play.add_argument("--turns", type=integer(1, MAX_TURNS), help="max_turns per episode")
    play.add_argument("--out", required=True, help="directory for transcripts.jsonl and summary.json")
    play.add_argument("--no-progress", action="store_true", help="no progress bar")
    play.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    play.set_defaults(handler=_cmd_agent_play)
