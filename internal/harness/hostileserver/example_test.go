package hostileserver_test

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/llmload/llmload/internal/harness/hostileserver"
)

// A server that redirects every request to its second origin records the
// Authorization header each origin received.
func ExampleNew() {
	srv := hostileserver.New(hostileserver.Redirect)
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"max_tokens":2}`))
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := hc.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("status:", resp.StatusCode)
	fmt.Printf("main received %q\n", srv.Authorizations(hostileserver.Main))
	fmt.Printf("other received %q\n", srv.Authorizations(hostileserver.Other))
	// Output:
	// status: 200
	// main received ["Bearer sk-test"]
	// other received ["Bearer sk-test"]
}
