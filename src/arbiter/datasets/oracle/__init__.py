"""Oracle seed rows, return rows and hidden tests: typed rows, strict loading, one rejection per bad row.

See ``docs/oracle.md`` ("Input rows").
"""

from arbiter.datasets.oracle.rows import (  # noqa: F401
    CompileSpecRow,
    Constraints,
    MAX_ANSWER_BYTES,
    MAX_HIDDEN_JSON_BYTES,
    MAX_LINE_BYTES,
    Message,
    MiB,
    PublicChecker,
    RETURN_SCHEMA_NAME,
    RejectCode,
    Rejection,
    ReturnRow,
    RowIssue,
    RowOrigin,
    RunSpecRow,
    SEED_SCHEMA_NAME,
    SeedRow,
    TestCaseIO,
    Verification,
    return_row_key,
)
from arbiter.datasets.oracle.records import (  # noqa: F401
    json_path,
    load_schema,
    schema_issues,
)
from arbiter.datasets.oracle.load import (  # noqa: F401
    LoadResult,
    answer_size_issues,
    iter_returns,
    load_returns,
    load_seeds,
)
from arbiter.datasets.oracle.hidden import (  # noqa: F401
    HiddenTests,
    load_hidden_tests,
)

__all__ = ['CompileSpecRow', 'Constraints', 'HiddenTests', 'LoadResult', 'MAX_ANSWER_BYTES', 'MAX_HIDDEN_JSON_BYTES', 'MAX_LINE_BYTES', 'Message', 'MiB', 'PublicChecker', 'RETURN_SCHEMA_NAME', 'RejectCode', 'Rejection', 'ReturnRow', 'RowIssue', 'RowOrigin', 'RunSpecRow', 'SEED_SCHEMA_NAME', 'SeedRow', 'TestCaseIO', 'Verification', 'answer_size_issues', 'iter_returns', 'json_path', 'load_hidden_tests', 'load_returns', 'load_schema', 'load_seeds', 'return_row_key', 'schema_issues']
