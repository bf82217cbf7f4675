"""Run a command as a stdio MCP server, copying every byte it writes to stdout into a log file.

    python stdio_tee.py LOGFILE -- COMMAND [ARGS...]

Used by the subprocess tests to check that nothing but protocol messages reaches stdout.
"""

import subprocess
import sys
import threading


def main() -> int:
    log_path, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: stdio_tee.py LOGFILE -- COMMAND [ARGS...]"
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child_in, child_out = child.stdin, child.stdout

    def forward_stdin() -> None:
        for chunk in iter(lambda: sys.stdin.buffer.read1(65536), b""):  # pyright: ignore[reportAttributeAccessIssue]
            child_in.write(chunk)
            child_in.flush()
        child_in.close()

    threading.Thread(target=forward_stdin, daemon=True).start()
    with open(log_path, "wb") as log:
        for chunk in iter(lambda: child_out.read1(65536), b""):  # pyright: ignore[reportAttributeAccessIssue]
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            log.write(chunk)
            log.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
