"""The Python reference of DESIGN.md's performance targets: the same adaptive-RAG graph with
LangGraph + langchain-openai, against the same scripted OpenAI-compatible server.

    python reference.py --base-url http://127.0.0.1:PORT/v1 --kb ../../kb --runs 50

Prints `ready` once imports are done and the graph is compiled (the suite timestamps it), then
one JSON line with the figures: import time, time per run, and per-run overhead (wall time
minus the server's own time, read from the bench server's `GET /stats` outside the timed part).

The graph has the Rust one's routes and bounded loops (route_question, kg_retrieval,
grade_documents, transform_query, web_search, generate; the groundedness and answer grades run in
the conditional edge after generate) and the typical run makes the same 7 structured calls with
the same schema names and prompts of similar size. It is the shape of LangGraph's adaptive-RAG
tutorial the seed documents follow: pydantic schemas through `with_structured_output`, documents
graded one after another. Retrieval is a
plain keyword-overlap ranking of the same knowledge-base passages (no BM25 library), which
favours Python slightly. No checkpointer (the Rust runs write one checkpoint per step).
"""

import time

_t0 = time.perf_counter()
import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import urllib.request  # noqa: E402
from typing import List, Literal, Optional, TypedDict  # noqa: E402

from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from pydantic import BaseModel  # noqa: E402

IMPORT_S = time.perf_counter() - _t0

MAX_RETRIES = 3
MAX_REGENERATIONS = 3
QUESTION = "What causes patch canker in durian?"


# Class names are the wire schema names (response_format.json_schema.name).
class route_query(BaseModel):  # noqa: N801
    data_source: Literal["kg_retrieval", "web_search", "llm_internal"]


class grade_documents(BaseModel):  # noqa: N801
    binary_score: Literal["yes", "no"]


class grade_hallucinations(BaseModel):  # noqa: N801
    binary_score: Literal["yes", "no"]


class grade_answer(BaseModel):  # noqa: N801
    binary_score: Literal["yes", "no"]


class refine_query(BaseModel):  # noqa: N801
    refined_question: str


class generate_answer(BaseModel):  # noqa: N801
    answer: str


class State(TypedDict):
    question: str
    query: str
    documents: List[dict]
    generation: Optional[str]
    route: Optional[str]
    rewrites: int
    regenerations: int
    outcome: Optional[str]


def load_passages(kb: pathlib.Path) -> List[dict]:
    passages = []
    for path in sorted(kb.glob("*.md")):
        title = path.stem
        for block in path.read_text().split("\n\n"):
            block = block.strip()
            if block.startswith("# "):
                title = block[2:]
            elif block and not block.startswith("#"):
                passages.append({"title": title, "content": block, "url": f"kb://{path.name}"})
    return passages


WORD = re.compile(r"\w+")


def tokens(text: str) -> set:
    return {w for w in WORD.findall(text.lower()) if len(w) > 2}


def build(base_url: str, kb: pathlib.Path):
    llm = ChatOpenAI(base_url=base_url, api_key="bench", model="bench", temperature=0, max_retries=0)
    router = llm.with_structured_output(route_query, method="json_schema", strict=True)
    doc_grader = llm.with_structured_output(grade_documents, method="json_schema", strict=True)
    hall_grader = llm.with_structured_output(grade_hallucinations, method="json_schema", strict=True)
    answer_grader = llm.with_structured_output(grade_answer, method="json_schema", strict=True)
    rewriter = llm.with_structured_output(refine_query, method="json_schema", strict=True)
    generator = llm.with_structured_output(generate_answer, method="json_schema", strict=True)
    passages = [(p, tokens(p["title"] + " " + p["content"])) for p in load_passages(kb)]

    def context(docs):
        return "\n\n".join(f"[{i + 1}] {d['title']}\n{d['content']}" for i, d in enumerate(docs))

    def route_question(state: State):
        r = router.invoke([SystemMessage("Route the question to a data source."),
                           HumanMessage(f"Question: {state['question']}")])
        return {"route": r.data_source}

    def kg_retrieval(state: State):
        q = tokens(state["query"])
        ranked = sorted(passages, key=lambda p: len(q & p[1]), reverse=True)
        return {"documents": [p for p, _ in ranked[:3]]}

    def grade_docs(state: State):
        kept = []
        for d in state["documents"]:  # one after another, as in the tutorial
            g = doc_grader.invoke([SystemMessage("Is the document relevant to the question?"),
                                   HumanMessage(f"Question: {state['question']}\n\nDocument:\n{d['title']}\n{d['content']}")])
            if g.binary_score == "yes":
                kept.append(d)
        return {"documents": kept}

    def transform_query(state: State):
        r = rewriter.invoke([SystemMessage("Rewrite the question for retrieval."),
                             HumanMessage(f"Question: {state['question']}")])
        return {"query": r.refined_question, "rewrites": state["rewrites"] + 1}

    def web_search(state: State):
        return {"documents": []}  # not configured, as in the Rust runs

    def generate(state: State):
        r = generator.invoke([SystemMessage("Answer from the numbered context documents."),
                              HumanMessage(f"Question: {state['question']}\n\nContext documents:\n{context(state['documents'])}")])
        regen = state["regenerations"] + (1 if state["generation"] is not None else 0)
        return {"generation": r.answer, "regenerations": regen}

    def route_after_routing(state: State):
        return {"kg_retrieval": "kg_retrieval", "web_search": "web_search"}.get(state["route"], "generate")

    def decide_to_generate(state: State):
        if state["documents"]:
            return "generate"
        return "transform_query" if state["rewrites"] < MAX_RETRIES else "web_search"

    def after_generation(state: State):
        h = hall_grader.invoke([SystemMessage("Is the answer grounded in the documents?"),
                                HumanMessage(f"Question: {state['question']}\n\nContext documents:\n{context(state['documents'])}\n\nAnswer to grade:\n{state['generation']}")])
        if h.binary_score != "yes":
            return "generate" if state["regenerations"] < MAX_REGENERATIONS else END
        a = answer_grader.invoke([SystemMessage("Does the answer resolve the question?"),
                                  HumanMessage(f"Question: {state['question']}\n\nAnswer:\n{state['generation']}")])
        if a.binary_score == "yes":
            return END
        return "transform_query" if state["rewrites"] < MAX_RETRIES else END

    g = StateGraph(State)
    g.add_node("route_question", route_question)
    g.add_node("kg_retrieval", kg_retrieval)
    g.add_node("grade_documents", grade_docs)
    g.add_node("transform_query", transform_query)
    g.add_node("web_search", web_search)
    g.add_node("generate", generate)
    g.add_edge(START, "route_question")
    g.add_conditional_edges("route_question", route_after_routing,
                            ["kg_retrieval", "web_search", "generate"])
    g.add_edge("kg_retrieval", "grade_documents")
    g.add_conditional_edges("grade_documents", decide_to_generate,
                            ["generate", "transform_query", "web_search"])
    g.add_edge("transform_query", "kg_retrieval")
    g.add_edge("web_search", "generate")
    g.add_conditional_edges("generate", after_generation, ["generate", "transform_query", END])
    return g.compile()


def server_stats(base_url: str):
    origin = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{origin}/stats") as r:
        v = json.load(r)
    return v["requests"], v["busy_us"] / 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--kb", required=True)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    app = build(args.base_url, pathlib.Path(args.kb))
    print("ready", flush=True)
    walls, overheads, calls = [], [], set()
    for i in range(args.warmup + args.runs):
        state = {"question": QUESTION, "query": QUESTION, "documents": [], "generation": None,
                 "route": None, "rewrites": 0, "regenerations": 0, "outcome": None}
        n0, busy0 = server_stats(args.base_url)
        t = time.perf_counter()
        out = app.invoke(state, {"recursion_limit": 50})
        wall = (time.perf_counter() - t) * 1e3
        n1, busy1 = server_stats(args.base_url)
        assert out["generation"], out
        calls.add(n1 - n0)
        if i >= args.warmup:
            walls.append(wall)
            overheads.append(wall - (busy1 - busy0))
    q = statistics.quantiles
    print(json.dumps({
        "import_s": IMPORT_S,
        "runs": args.runs,
        "calls_per_run": sorted(calls),
        "wall_ms_median": statistics.median(walls),
        "wall_ms_mean": statistics.fmean(walls),
        "wall_ms_p90": q(walls, n=10)[-1] if len(walls) > 1 else walls[0],
        "overhead_ms_median": statistics.median(overheads),
        "overhead_ms_p90": q(overheads, n=10)[-1] if len(overheads) > 1 else overheads[0],
        "runs_per_sec": len(walls) / (sum(walls) / 1e3),
        "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }), flush=True)


if __name__ == "__main__":
    main()
