-- wrk script: POST the AdmissionReview in $BODY_FILE to every request (bench/webhook/run.sh).
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
