// The study's Go side (gornir's design): one goroutine per host, each sleeping one round
// trip, the process timed from outside. Usage: gornir_standin HOSTS RTT_SECONDS
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gornir_standin HOSTS RTT_SECONDS")
		os.Exit(2)
	}
	hosts, err := strconv.Atoi(os.Args[1])
	if err != nil || hosts < 1 || hosts > 10000000 {
		fmt.Fprintln(os.Stderr, "gornir_standin: HOSTS must be a whole number from 1 to 10000000")
		os.Exit(2)
	}
	rtt, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil || rtt < 0 || rtt > 60 {
		fmt.Fprintln(os.Stderr, "gornir_standin: RTT_SECONDS must be a number from 0 to 60")
		os.Exit(2)
	}
	delay := time.Duration(rtt * float64(time.Second))
	results := make([]bool, hosts)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < hosts; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(delay)
			results[i] = true
		}(i)
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		if r {
			ok++
		}
	}
	fmt.Printf("%d ok, 0 failed | run %.3f s\n", ok, time.Since(start).Seconds())
}
