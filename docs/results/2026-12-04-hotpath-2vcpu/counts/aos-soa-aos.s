L:
	movsd	(%rdi), %xmm2
	mulsd	0x8(%rdi), %xmm2
	mulsd	0x10(%rdi), %xmm2
	addsd	%xmm2, %xmm0
	andpd	%xmm1, %xmm2
	xorl	%esi, %esi
	ucomisd	0x18(%rdi), %xmm2
	movsd	0x40(%rdi), %xmm2
	seta	%sil
	mulsd	0x48(%rdi), %xmm2
	mulsd	0x50(%rdi), %xmm2
	addq	%rax, %rsi
	addsd	%xmm2, %xmm0
	andpd	%xmm1, %xmm2
	xorl	%eax, %eax
	ucomisd	0x58(%rdi), %xmm2
	leaq	0x80(%rdi), %rdi
	seta	%al
	addq	%rsi, %rax
	addq	$-0x2, %rdx
	jne	L
