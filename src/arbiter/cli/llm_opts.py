"""Help texts of the options ``arbiter sample`` and ``arbiter oracle generate`` share (one client, one meaning:
``arbiter.pipelines.llm_client``)."""

MB = 1024 * 1024
RETRIES_HELP = ("retries per request: the openai client's own (HTTP 408/409/429/5xx, connection errors, timeouts; "
                "backoff, Retry-After first), and a malformed answer asked again")
TIMEOUT_HELP = "seconds of one HTTP attempt, from the request to the answer's last byte (then it is retried)"
SIZE_HELP = "largest answer read, MiB (a larger one is recorded as an error, not retried)"
KEY_NOTE = "API key from $OPENAI_API_KEY, optional (a local server without --api-key takes none)"
