"""A small REST service on FastAPI (from PyPI, in .cache/venv) that publishes its own OpenAPI
document, for the tests of teamgate's [[sources.openapi]] (tests/api/openapi.rs):

    .cache/venv/bin/python tests/interop/openapi_app.py

It listens on 127.0.0.1 (a free port) and prints one line, `listening on http://127.0.0.1:PORT`,
once it accepts connections. Its document is at /openapi.json, with that URL as its server.

Operations: list_issues (GET /issues?state=&limit=), get_issue (GET /issues/{issue_id}),
create_issue (POST /issues, JSON body), delete_issue (DELETE /issues/{issue_id}), whoami
(GET /whoami: the Authorization header it got, so a test sees what teamgate sent).
"""

import socket
import sys
from typing import Optional

import uvicorn
from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.bind(("127.0.0.1", 0))
PORT = sock.getsockname()[1]

app = FastAPI(title="tracker", version="1", servers=[{"url": f"http://127.0.0.1:{PORT}"}])


class NewIssue(BaseModel):
    title: str
    body: str = ""


class Issue(BaseModel):
    id: int
    title: str
    body: str
    state: str


class Who(BaseModel):
    authorization: str


ISSUES = {
    1: Issue(id=1, title="Login fails on Safari", body="Steps...", state="open"),
    2: Issue(id=2, title="Dark mode", body="Please", state="closed"),
}


@app.get("/issues", operation_id="list_issues", tags=["issues"], summary="List issues")
def list_issues(state: Optional[str] = None, limit: int = 10) -> list[Issue]:
    found = [i for i in ISSUES.values() if state is None or i.state == state]
    return found[:limit]


@app.get("/issues/{issue_id}", operation_id="get_issue", tags=["issues"], summary="One issue")
def get_issue(issue_id: int) -> Issue:
    if issue_id not in ISSUES:
        raise HTTPException(status_code=404, detail=f"no issue {issue_id}")
    return ISSUES[issue_id]


@app.post("/issues", operation_id="create_issue", tags=["issues"], summary="Open an issue")
def create_issue(new: NewIssue) -> Issue:
    issue = Issue(id=max(ISSUES) + 1, title=new.title, body=new.body, state="open")
    ISSUES[issue.id] = issue
    return issue


@app.delete("/issues/{issue_id}", operation_id="delete_issue", tags=["issues"])
def delete_issue(issue_id: int) -> dict:
    ISSUES.pop(issue_id, None)
    return {"deleted": issue_id}


@app.get("/whoami", operation_id="whoami", tags=["meta"], summary="What the caller sent")
def whoami(authorization: str = Header(default="")) -> Who:
    return Who(authorization=authorization)


if __name__ == "__main__":
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)
    sock.listen(64)
    print(f"listening on http://127.0.0.1:{PORT}", flush=True)
    server.run(sockets=[sock])
