"""A model in a process of its own: the frames over its pipe (:mod:`daemon.process.frames`)
and the daemon's side that starts it, notices its death and restarts it
(:mod:`daemon.process.supervisor`). The language model (:mod:`daemon.llm.supervised`) and the
speech model (:mod:`daemon.asr.supervised`) both run this way."""
