"""The embedded model server's process: llama.cpp's HTTP server from the `xllamacpp` wheel.

    python -m dossier.services.llm_server --model FILE --alias NAME --host 127.0.0.1 --port P \\
        --ctx-size 8192 --threads 2

`dossier.services.llm` runs it detached and polls `/health`; nothing imports
it. `xllamacpp.Server(params)` loads the model and serves HTTP from threads of
its own, so the main thread only waits for SIGTERM or SIGINT and then exits.
The model file is opened only after `model_file` verified it; this module
trusts the path it is given.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line.

    Args:
        argv: Arguments (default: `sys.argv[1:]`).
    """
    parser = argparse.ArgumentParser(prog="python -m dossier.services.llm_server")
    parser.add_argument("--model", required=True, help="the verified GGUF file")
    parser.add_argument("--alias", required=True, help="the model name clients ask for")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx-size", type=int, default=8192, help="context size in tokens")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    return parser.parse_args(argv)


def build_params(args: argparse.Namespace):  # noqa: ANN201 - xllamacpp.CommonParams, imported lazily
    """The server's parameters: one slot, the model's own chat template, tool calls parsed.

    Args:
        args: The parsed command line.

    Returns:
        An `xllamacpp.CommonParams`.
    """
    import xllamacpp  # only this process needs llama.cpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = args.alias
    params.hostname = args.host  # 0.2.12 takes one host; later releases a list (`hostnames`)
    params.port = args.port
    params.n_ctx = args.ctx_size
    # One slot: requests are answered one at a time on a small CPU anyway, and the slot keeps
    # the previous prompt's KV cache, which a request with the same prefix then reuses.
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # The GGUF's Jinja chat template renders `tools` and lets the server parse tool calls.
    params.use_jinja = True
    params.offline = True  # never reach for a model hub: the file is local and verified
    params.webui = False
    # llama.cpp keeps older prompts' caches in RAM besides the slot's (8 GiB by default): bound it.
    params.cache_ram_mib = 1024
    return params


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT.

    Args:
        argv: Arguments (default: `sys.argv[1:]`).

    Returns:
        Never returns normally: the process exits on a signal.
    """
    args = parse_args(argv)
    # Block the signals before llama.cpp starts its threads, which inherit the mask: then
    # only `sigwait` below receives them, never a native thread in the middle of its work.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    import xllamacpp

    server = xllamacpp.Server(build_params(args))  # noqa: F841 - serves while it is referenced
    print(f"llm server: {args.alias} on http://{args.host}:{args.port}/v1 ({args.threads} threads)", flush=True)
    received = signal.sigwait({signal.SIGTERM, signal.SIGINT})
    print(f"llm server: stopping on {signal.Signals(received).name}", flush=True)
    # Nothing to flush (the KV cache lives in memory); exit at once rather than wait for the
    # native threads to wind down, which a signal-driven stop must not depend on.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
