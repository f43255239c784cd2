//go:build linux && (amd64 || arm64)

package vk

import (
	"fmt"
	"math"
	"structs"
)

// ExtPipelineExecutableProperties is the extension behind
// PipelineStatistics (VK_KHR_pipeline_executable_properties).
const ExtPipelineExecutableProperties = "VK_KHR_pipeline_executable_properties"

// PipelineCreateCaptureStatistics asks the driver to keep a pipeline's
// compile statistics (VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR).
const PipelineCreateCaptureStatistics Flags = 0x40

const (
	stPipelineExecutableFeatures   = 1000269000
	stPipelineInfoKHR              = 1000269001
	stPipelineExecutableProperties = 1000269002
	stPipelineExecutableInfo       = 1000269003
	stPipelineExecutableStatistic  = 1000269004
)

type pipelineExecutableFeatures struct {
	_                      structs.HostLayout
	sType                  uint32
	pNext                  uintptr
	pipelineExecutableInfo uint32
}

type pipelineInfoKHR struct {
	_        structs.HostLayout
	sType    uint32
	pNext    uintptr
	pipeline Pipeline
}

type pipelineExecutableProperties struct {
	_            structs.HostLayout
	sType        uint32
	pNext        uintptr
	stages       Flags
	name         [256]byte
	description  [256]byte
	subgroupSize uint32
}

type pipelineExecutableInfo struct {
	_               structs.HostLayout
	sType           uint32
	pNext           uintptr
	pipeline        Pipeline
	executableIndex uint32
}

type pipelineExecutableStatistic struct {
	_           structs.HostLayout
	sType       uint32
	pNext       uintptr
	name        [256]byte
	description [256]byte
	format      uint32
	value       uint64 // the union's 8 bytes, read by format
}

// Statistic formats (VkPipelineExecutableStatisticFormatKHR).
const (
	statBool32  = 0
	statInt64   = 1
	statUint64  = 2
	statFloat64 = 3
)

// PipelineStatistic is one compile statistic of a pipeline executable
// (for NVIDIA: registers, shared and local memory, instruction counts).
type PipelineStatistic struct {
	Name, Description string
	Value             float64 // integers and booleans converted
	Integer           bool    // the driver reported an integer or a boolean
}

func (s PipelineStatistic) String() string {
	if s.Integer {
		return fmt.Sprintf("%s=%d", s.Name, int64(s.Value))
	}
	return fmt.Sprintf("%s=%g", s.Name, s.Value)
}

// PipelineExecutable is one executable of a pipeline (a compute pipeline
// has one) with its statistics.
type PipelineExecutable struct {
	Name, Description string
	SubgroupSize      uint32
	Statistics        []PipelineStatistic
}

// PipelineStatisticsEnabled reports whether the device was created with
// DeviceOptions.PipelineStatistics (and the driver offered it).
func (d *Device) PipelineStatisticsEnabled() bool {
	return d.getPipelineExecutableProperties != 0 && d.getPipelineExecutableStatistics != 0
}

// PipelineStatistics returns the compile statistics of a pipeline created
// with PipelineCreateCaptureStatistics on a device opened with
// DeviceOptions.PipelineStatistics.
func (d *Device) PipelineStatistics(p Pipeline) ([]PipelineExecutable, error) {
	if !d.PipelineStatisticsEnabled() {
		return nil, missing("vkGetPipelineExecutableStatisticsKHR")
	}
	a := getArena()
	defer putArena(a)
	pi := newIn[pipelineInfoKHR](a)
	pi.sType, pi.pipeline = stPipelineInfoKHR, p
	n := newIn[uint32](a)
	if err := check("vkGetPipelineExecutablePropertiesKHR", call(d.getPipelineExecutableProperties, uintptr(d.h), ptrOf(pi), ptrOf(n), 0)); err != nil {
		return nil, err
	}
	if *n == 0 {
		return nil, nil
	}
	props := sliceIn[pipelineExecutableProperties](a, int(*n))
	for i := range props {
		props[i].sType = stPipelineExecutableProperties
	}
	if r := call(d.getPipelineExecutableProperties, uintptr(d.h), ptrOf(pi), ptrOf(n), ptrOf(&props[0])); r != Incomplete {
		if err := check("vkGetPipelineExecutablePropertiesKHR", r); err != nil {
			return nil, err
		}
	}
	out := make([]PipelineExecutable, int(*n))
	for i := range out {
		pr := &props[i]
		out[i] = PipelineExecutable{Name: goString(pr.name[:]), Description: goString(pr.description[:]), SubgroupSize: pr.subgroupSize}
		ei := newIn[pipelineExecutableInfo](a)
		ei.sType, ei.pipeline, ei.executableIndex = stPipelineExecutableInfo, p, uint32(i)
		m := newIn[uint32](a)
		if err := check("vkGetPipelineExecutableStatisticsKHR", call(d.getPipelineExecutableStatistics, uintptr(d.h), ptrOf(ei), ptrOf(m), 0)); err != nil {
			return nil, err
		}
		if *m == 0 {
			continue
		}
		st := sliceIn[pipelineExecutableStatistic](a, int(*m))
		for j := range st {
			st[j].sType = stPipelineExecutableStatistic
		}
		if r := call(d.getPipelineExecutableStatistics, uintptr(d.h), ptrOf(ei), ptrOf(m), ptrOf(&st[0])); r != Incomplete {
			if err := check("vkGetPipelineExecutableStatisticsKHR", r); err != nil {
				return nil, err
			}
		}
		for j := range int(*m) {
			s := &st[j]
			ps := PipelineStatistic{Name: goString(s.name[:]), Description: goString(s.description[:]), Integer: true}
			switch s.format {
			case statBool32:
				ps.Value = float64(uint32(s.value))
			case statInt64:
				ps.Value = float64(int64(s.value))
			case statUint64:
				ps.Value = float64(s.value)
			default:
				ps.Value, ps.Integer = math.Float64frombits(s.value), false
			}
			out[i].Statistics = append(out[i].Statistics, ps)
		}
	}
	return out, nil
}
